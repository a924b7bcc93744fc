// SPDX-License-Identifier: GPL-2.0
/*
 * The receive limit, through libibumad: a file that does not read keeps at
 * most 200000 received MADs (ib_umad drops one only once it holds more than
 * 200000, so 200001 fit); the rest are dropped, but a timeout report still
 * gets in; once read empty, the file receives again.
 *
 * The MADs go over ib_loopback's fabric (the test HCA, loaded here unless
 * it is), a copy and a workqueue, which costs a fraction of rxe's UDP path.
 * Under KASAN, KCSAN or SLUB's debugging and emulation they still take
 * minutes.
 */
#include <endian.h>
#include <poll.h>
#include <infiniband/umad.h>

#include "../kselftest_harness.h"
#include "umad_test.h"

#define LIMIT 200000
#define FLOOD (LIMIT + LIMIT / 100) /* past the limit, with room to spare */
#define VENDOR_CLASS 0x0b
#define GET 0x01
#define SET 0x02
/*
 * The flood goes in batches no larger than the MAD layer's receive queue
 * (512), each behind a marker that must arrive before the next batch: a UD
 * packet that finds no receive posted is lost, and the receiver's pace is
 * then the only limit.
 */
#define BATCH 256
#define MAD_SIZE 256
#define QP1_QKEY 0x80010000

struct port {
	int fd, agent;
	int to_lid; /* where this port sends: the other one */
};

/* Port 1's LID, or -1. */
static int lid_of(const char *ibdev)
{
	char path[128], lid[16];

	snprintf(path, sizeof(path), SYS_IB_CLASS "/%s/ports/1/lid", ibdev);
	if (read_attr(path, lid, sizeof(lid)))
		return -1;
	return strtol(lid, NULL, 0);
}

static int open_port(struct port *p, const char *ibdev, const char *peer, long *methods)
{
	p->fd = umad_open_port((char *)ibdev, 1);
	if (p->fd < 0)
		return p->fd;
	p->agent = umad_register(p->fd, VENDOR_CLASS, 1, 0, methods);
	if (p->agent < 0)
		return p->agent;
	p->to_lid = lid_of(peer);
	return p->to_lid < 0 ? -1 : 0;
}

static int send_method(struct port *p, void *umad, int method, __u64 tid, int timeout_ms)
{
	__u8 *mad = umad_get_mad(umad);

	memset(mad, 0, MAD_SIZE);
	mad[0] = 1;
	mad[1] = VENDOR_CLASS;
	mad[2] = 1;
	mad[3] = method;
	*(__u64 *)(mad + 8) = htobe64(tid);
	umad_set_addr(umad, p->to_lid, 1, 0, QP1_QKEY);
	return umad_send(p->fd, p->agent, umad, MAD_SIZE, timeout_ms, 0);
}

static int send_get(struct port *p, void *umad, __u64 tid, int timeout_ms)
{
	return send_method(p, umad, GET, tid, timeout_ms);
}

/*
 * How long a marker gets to land: a MAD crosses ib_loopback in
 * milliseconds, so only a lost one takes that long.
 */
#define MARKER_MS 10000

/*
 * Sends a marker (a SET) behind what the client sent, on the same QP, and
 * reads markers until that one: then all before it have landed, however
 * slow the guest. A marker of an earlier batch, late, is passed over; a
 * lost one only costs the wait. Returns the send's result.
 */
static int send_marker(struct port *client, struct port *marker, void *umad, __u64 tid)
{
	int len, ret;

	ret = send_method(client, umad, SET, tid, 0);
	if (ret)
		return ret;
	do {
		len = MAD_SIZE;
		if (umad_recv(marker->fd, umad, &len, MARKER_MS) < 0)
			return 0;
	} while ((__u32)be64toh(*(__u64 *)((__u8 *)umad_get_mad(umad) + 8)) != (__u32)tid);
	return 0;
}

/* Reads what is queued, without waiting; returns how many. */
static long drain(int fd, void *umad, long *reports)
{
	long n = 0;
	int len;

	for (;;) {
		len = MAD_SIZE;
		if (umad_recv(fd, umad, &len, 0) < 0)
			return n;
		if (umad_status(umad) == ETIMEDOUT)
			(*reports)++;
		else
			n++;
	}
}

FIXTURE(limit) {
	bool loaded_here;
};

FIXTURE_SETUP(limit)
{
	if (access(SYS_IB_CLASS "/iblo0", F_OK)) {
		if (!loopback_available())
			SKIP(return, "no ib_loopback, the test HCA (CONFIG_INFINIBAND_LOOPBACK)");
		ASSERT_EQ(0, LOOPBACK_LOAD("ndevs=2 nports=1"));
		self->loaded_here = true;
	}
}

FIXTURE_TEARDOWN(limit)
{
	if (self->loaded_here)
		EXPECT_EQ(0, system("rmmod ib_loopback"));
}

/* 200000 MADs take minutes under KASAN and emulation: not the default 30 s. */
TEST_F_TIMEOUT(limit, a_file_that_does_not_read_keeps_at_most_200001, 900)
{
	long get_only[16 / sizeof(long)] = { 1L << GET };
	long set_only[16 / sizeof(long)] = { 1L << SET };
	struct port client, server, silent, marker;
	long received, reports = 0;
	bool late = false;
	void *umad;
	int len;

	ASSERT_EQ(0, umad_init());
	ASSERT_EQ(0, open_port(&client, "iblo0", "iblo1", NULL));
	ASSERT_EQ(0, open_port(&server, "iblo1", "iblo0", get_only));
	/*
	 * umad_size() is the header's size once a port is open: before, it
	 * is the old ABI's, 8 bytes short.
	 */
	umad = calloc(1, umad_size() + MAD_SIZE);
	ASSERT_NE(NULL, umad);
	/* Takes the server's own request and never answers it. */
	ASSERT_EQ(0, open_port(&silent, "iblo0", "iblo1", get_only));
	/* Beside the server, takes the markers. */
	ASSERT_EQ(0, open_port(&marker, "iblo1", "iblo0", set_only));

	for (long i = 0; i < FLOOD; i++) {
		ASSERT_EQ(0, send_get(&client, umad, i, 0)) TH_LOG("send %ld", i);
		if (i % BATCH == BATCH - 1)
			ASSERT_EQ(0, send_marker(&client, &marker, umad, 2 * FLOOD + i));
	}
	/* The last ones land (and are dropped) before the drain. */
	ASSERT_EQ(0, send_marker(&client, &marker, umad, 3 * FLOOD));
	/*
	 * A full queue still takes a timeout report: due 100 ms after the GET
	 * went, which was before silent read it; a second is ten times that.
	 */
	ASSERT_EQ(0, send_get(&server, umad, 0xfeed, 100));
	len = MAD_SIZE;
	ASSERT_EQ(silent.agent, umad_recv(silent.fd, umad, &len, 5000));
	sleep(1);

	received = drain(server.fd, umad, &reports);
	EXPECT_EQ(LIMIT + 1, received) TH_LOG("of %d sent", FLOOD);
	/*
	 * A report later than that (a slow guest) comes to a queue no longer
	 * full, and cannot tell; but a report dropped never comes.
	 */
	if (!reports) {
		len = MAD_SIZE;
		ASSERT_EQ(server.agent, umad_recv(server.fd, umad, &len, 10000))
			TH_LOG("the timeout report never came");
		EXPECT_EQ(ETIMEDOUT, umad_status(umad));
		late = true;
	} else {
		EXPECT_EQ(1, reports);
	}
	/* Read empty, it receives again. */
	ASSERT_EQ(0, send_get(&client, umad, FLOOD, 0));
	len = MAD_SIZE;
	EXPECT_EQ(server.agent, umad_recv(server.fd, umad, &len, 5000));

	umad_close_port(client.fd);
	umad_close_port(server.fd);
	umad_close_port(silent.fd);
	umad_close_port(marker.fd);
	free(umad);
	umad_done();
	if (late && _metadata->exit_code == KSFT_PASS)
		SKIP(return, "the timeout report came after the queue was read empty");
}

TEST_HARNESS_MAIN
