// SPDX-License-Identifier: GPL-2.0
/*
 * SMPs and GSI MADs through umad on InfiniBand ports: the test-only
 * ib_loopback HCA (test_modules/ib_loopback.c), 2 devices of 2 ports, port p
 * of iblo0 cabled to port p of iblo1. Directed-route SubnGets to the local
 * SMA and to the cabled peer, LID-routed SubnGets to another port's LID, a
 * GSI GET by LID with and without GRH, and the fabric's fault knobs:
 * timeouts, lost and dropped MADs, retries, delays. Through unchanged
 * libibumad (linked statically). Each test loads ib_loopback afresh (unless
 * it was loaded already) and unloads it again.
 */
#include <assert.h>
#include <endian.h>
#include <time.h>
#include <infiniband/umad.h>

#include "../kselftest_harness.h"
#include "umad_test.h"

#define CLASS_SUBN_LID 0x01
#define CLASS_SUBN_DR 0x81
#define VENDOR_CLASS 0x09 /* vendor range 1: no OUI, no RMPP */
#define METHOD_GET 0x01
#define METHOD_GET_RESP 0x81
#define ATTR_NODE_DESC 0x0010
#define ATTR_NODE_INFO 0x0011
#define ATTR_PORT_INFO 0x0015
#define SMP_DIRECTION 0x8000
#define QP1_QKEY 0x80010000
#define PERMISSIVE_LID 0xffff
#define NOBODY_LID 0x0fff
#define MAD_SIZE 256
#define CLASS_SA 0x03
#define METHOD_GET_TABLE 0x12
#define METHOD_GET_TABLE_RESP 0x92
#define RMPP_TYPE_DATA 1
#define RMPP_FLAG_ACTIVE 0x01
#define SA_HDR_LEN 56 /* MAD, RMPP and SA headers */
#define RMPP_DATA_LEN 1000 /* five segments of 200 bytes */
#define BIG_MAD 4096
#define NPORTS 4 /* iblo0/1, iblo0/2, iblo1/1, iblo1/2 */
/* umad puts the agent's number in the upper half of a request's TID. */
#define TID_LOW(mad) ((uint32_t)be64toh((mad)->tid))

struct smp {
	uint8_t base_version;
	uint8_t mgmt_class;
	uint8_t class_version;
	uint8_t method;
	__be16 status;
	uint8_t hop_ptr;
	uint8_t hop_cnt;
	__be64 tid;
	__be16 attr_id;
	__be16 resv;
	__be32 attr_mod;
	__be64 mkey;
	__be16 dr_slid;
	__be16 dr_dlid;
	uint8_t reserved[28];
	uint8_t data[64];
	uint8_t initial_path[64];
	uint8_t return_path[64];
};

/* Every field is naturally aligned: no padding, no need for packed. */
static_assert(sizeof(struct smp) == 256, "an SMP is 256 bytes");

/* What sysfs says of a loopback port. */
struct lo_port {
	char ca[UMAD_CA_NAME_LEN];
	int port;
	int lid;
	uint32_t cap_mask;
	uint8_t gid[16];
	uint8_t node_guid[8];
};

FIXTURE(lo)
{
	struct lo_port p[NPORTS];
	int fd[NPORTS];
	bool loaded_here;
	void *umad;
	struct smp *mad;
	uint32_t tid;
	int wait_ms; /* exchange()'s timeout: ANSWERED_MS, or SILENCE_MS */
};

/*
 * exchange()'s timeout where no answer is the right outcome: short, as a
 * slow guest can then only miss a wrong answer, never a right outcome.
 */
#define SILENCE_MS 500

static unsigned long read_number(const char *path)
{
	char buf[64];

	if (read_attr(path, buf, sizeof(buf)))
		return ~0UL;
	return strtoul(buf, NULL, 0);
}

static int write_file(const char *file, const char *value)
{
	char path[128];
	FILE *f;
	int ret;

	snprintf(path, sizeof(path), LOOPBACK_DBG "%s", file);
	f = fopen(path, "w");
	if (!f)
		return -errno;
	ret = fprintf(f, "%s\n", value) < 0 ? -EIO : 0;
	if (fclose(f))
		ret = -errno;
	return ret;
}

static int write_knob(const char *knob, unsigned long value)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%lu", value);
	return write_file(knob, buf);
}

/* A counter of the stats file (tx, delivered, dropped, lost). */
static long stat_of(const char *name)
{
	char line[64], key[32];
	long value = -1, v;
	FILE *f;

	f = fopen(LOOPBACK_DBG "stats", "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%31s %ld", key, &v) == 2 && !strcmp(key, name))
			value = v;
	fclose(f);
	return value;
}

static int read_port(struct lo_port *p, const char *ca, int port)
{
	char path[256], buf[64];
	unsigned int w[4];

	snprintf(p->ca, sizeof(p->ca), "%s", ca);
	p->port = port;
	snprintf(path, sizeof(path), SYS_IB_CLASS "/%s/ports/%d/lid", ca, port);
	p->lid = read_number(path);
	snprintf(path, sizeof(path), SYS_IB_CLASS "/%s/ports/%d/cap_mask", ca,
		 port);
	p->cap_mask = read_number(path);
	snprintf(path, sizeof(path), SYS_IB_CLASS "/%s/node_guid", ca);
	if (read_attr(path, buf, sizeof(buf)) ||
	    sscanf(buf, "%x:%x:%x:%x", &w[0], &w[1], &w[2], &w[3]) != 4)
		return -EINVAL;
	for (int i = 0; i < 4; i++) {
		p->node_guid[2 * i] = w[i] >> 8;
		p->node_guid[2 * i + 1] = w[i];
	}
	return read_gid(ca, port, 0, p->gid);
}

FIXTURE_SETUP(lo)
{
	for (int i = 0; i < NPORTS; i++)
		self->fd[i] = -1;
	if (access(SYS_IB_CLASS "/iblo0", F_OK)) {
		if (!loopback_available())
			SKIP(return, "no ib_loopback, the test HCA (CONFIG_INFINIBAND_LOOPBACK)");
		ASSERT_EQ(0, LOOPBACK_LOAD("ndevs=2 nports=2"));
		self->loaded_here = true;
	}
	ASSERT_EQ(0, write_knob("drop_every_nth", 0));
	ASSERT_EQ(0, write_knob("drop_next", 0));
	ASSERT_EQ(0, write_knob("delay_ms", 0));
	ASSERT_EQ(0, write_knob("notify_delay_ms", 0));
	ASSERT_EQ(0, umad_init());
	for (int i = 0; i < NPORTS; i++) {
		char ca[UMAD_CA_NAME_LEN];

		snprintf(ca, sizeof(ca), "iblo%d", i / 2);
		ASSERT_EQ(0, read_port(&self->p[i], ca, i % 2 + 1));
		self->fd[i] = umad_open_port(ca, i % 2 + 1);
		ASSERT_LE(0, self->fd[i]) TH_LOG("umad_open_port(%s, %d): %s",
						 ca, i % 2 + 1,
						 strerror(-self->fd[i]));
	}
	self->umad = calloc(1, umad_size() + MAD_SIZE);
	ASSERT_NE(NULL, self->umad);
	self->mad = umad_get_mad(self->umad);
	self->tid = 0x10000;
	self->wait_ms = ANSWERED_MS;
}

FIXTURE_TEARDOWN(lo)
{
	free(self->umad);
	for (int i = 0; i < NPORTS; i++)
		if (self->fd[i] >= 0)
			umad_close_port(self->fd[i]);
	umad_done();
	if (self->loaded_here)
		EXPECT_EQ(0, system("rmmod ib_loopback"));
}

/* A fresh MAD of class/method/attribute in self->umad, addressed to dlid. */
static void new_mad(struct _test_data_lo *self, int class, int method, int attr,
		    int dlid, int qpn)
{
	struct smp *mad = self->mad;

	memset(self->umad, 0, umad_size() + MAD_SIZE);
	mad->base_version = 1;
	mad->mgmt_class = class;
	mad->class_version = 1;
	mad->method = method;
	mad->tid = htobe64(++self->tid);
	mad->attr_id = htobe16(attr);
	umad_set_addr(self->umad, dlid, qpn, 0, qpn ? QP1_QKEY : 0);
}

/* A directed-route SubnGet of attr out of the ports in path[1..hops]. */
static void new_dr_smp(struct _test_data_lo *self, int attr, int hops,
		       const uint8_t *path)
{
	new_mad(self, CLASS_SUBN_DR, METHOD_GET, attr, PERMISSIVE_LID, 0);
	self->mad->hop_cnt = hops;
	self->mad->dr_slid = htobe16(PERMISSIVE_LID);
	self->mad->dr_dlid = htobe16(PERMISSIVE_LID);
	for (int i = 1; i <= hops; i++)
		self->mad->initial_path[i] = path[i];
}

/*
 * Sends self->umad from port i and receives what comes back to port i. A
 * request that is answered asks for ANSWERED_MS; one that is to time out,
 * for a short timeout, which a slow guest only reaches later. Arrivals get
 * 5 s here (20 s in RMPP), which only a lost MAD runs out: ib_loopback
 * delivers in milliseconds, in well under a second on the slowest guest.
 */
static int send_recv(struct _test_data_lo *self, int i, int agent, int timeout_ms,
		     int retries)
{
	int len = MAD_SIZE, ret;

	ret = umad_send(self->fd[i], agent, self->umad, MAD_SIZE, timeout_ms,
			retries);
	if (ret)
		return ret;
	memset(self->umad, 0, umad_size() + MAD_SIZE);
	return umad_recv(self->fd[i], self->umad, &len,
			 timeout_ms * (retries + 1) + 5000);
}

static int recv_on(struct _test_data_lo *self, int i, int timeout_ms)
{
	int len = MAD_SIZE;

	memset(self->umad, 0, umad_size() + MAD_SIZE);
	return umad_recv(self->fd[i], self->umad, &len, timeout_ms);
}

/* Checks a NodeInfo against what sysfs says of port p. */
static void check_node_info(struct __test_metadata *_metadata,
			    const uint8_t *d, const struct lo_port *p)
{
	EXPECT_EQ(1, d[0]);		/* BaseVersion */
	EXPECT_EQ(1, d[2]);		/* NodeType: CA */
	EXPECT_EQ(2, d[3]);		/* NumPorts */
	EXPECT_EQ(0, memcmp(d + 4, p->node_guid, 8));	/* SystemImageGUID */
	EXPECT_EQ(0, memcmp(d + 12, p->node_guid, 8));	/* NodeGUID */
	EXPECT_EQ(0, memcmp(d + 20, p->gid + 8, 8));	/* PortGUID */
	EXPECT_EQ(4, d[28] << 8 | d[29]);	/* PartitionCap */
	EXPECT_EQ(p->port, d[36]);	/* LocalPortNum */
}

TEST_F(lo, dr_node_info_of_the_local_port)
{
	int agent = umad_register(self->fd[1], CLASS_SUBN_DR, 1, 0, NULL);

	ASSERT_LE(0, agent) TH_LOG("register: %s", strerror(-agent));
	new_dr_smp(self, ATTR_NODE_INFO, 0, NULL);
	ASSERT_EQ(agent, send_recv(self, 1, agent, ANSWERED_MS, 0));
	ASSERT_EQ(0, umad_status(self->umad));
	EXPECT_EQ(METHOD_GET_RESP, self->mad->method);
	EXPECT_EQ(SMP_DIRECTION, be16toh(self->mad->status));
	EXPECT_EQ(self->tid, TID_LOW(self->mad));
	check_node_info(_metadata, self->mad->data, &self->p[1]);
}

TEST_F(lo, dr_node_info_of_the_cabled_peer)
{
	for (int i = 0; i < 2; i++) {
		int agent = umad_register(self->fd[i], CLASS_SUBN_DR, 1, 0, NULL);
		uint8_t path[2] = { 0, self->p[i].port };
		long lost = stat_of("lost");

		ASSERT_LE(0, agent) TH_LOG("register: %s", strerror(-agent));
		/* Out of iblo0 port p: iblo1 port p answers. */
		new_dr_smp(self, ATTR_NODE_INFO, 1, path);
		ASSERT_EQ(agent, send_recv(self, i, agent, ANSWERED_MS, 0));
		ASSERT_EQ(0, umad_status(self->umad)) TH_LOG("from port %d", i + 1);
		EXPECT_EQ(METHOD_GET_RESP, self->mad->method);
		EXPECT_EQ(SMP_DIRECTION, be16toh(self->mad->status));
		EXPECT_EQ(self->tid, TID_LOW(self->mad));
		EXPECT_EQ(1, self->mad->hop_cnt);
		EXPECT_EQ(self->p[i].port, self->mad->return_path[1]);
		check_node_info(_metadata, self->mad->data, &self->p[2 + i]);
		EXPECT_EQ(lost, stat_of("lost"));
	}
}

TEST_F(lo, dr_smp_beyond_a_ca_is_discarded)
{
	int agent = umad_register(self->fd[0], CLASS_SUBN_DR, 1, 0, NULL);
	uint8_t path[3] = { 0, 1, 1 };

	ASSERT_LE(0, agent) TH_LOG("register: %s", strerror(-agent));
	/* Two hops: iblo1 is a CA, it does not forward (C14-9:2). */
	new_dr_smp(self, ATTR_NODE_INFO, 2, path);
	ASSERT_EQ(agent, send_recv(self, 0, agent, 300, 0));
	EXPECT_EQ(ETIMEDOUT, umad_status(self->umad));
}

TEST_F(lo, dr_port_info_of_the_local_port)
{
	int agent = umad_register(self->fd[3], CLASS_SUBN_DR, 1, 0, NULL);
	const uint8_t *d = self->mad->data;

	ASSERT_LE(0, agent) TH_LOG("register: %s", strerror(-agent));
	new_dr_smp(self, ATTR_PORT_INFO, 0, NULL);
	ASSERT_EQ(agent, send_recv(self, 3, agent, ANSWERED_MS, 0));
	ASSERT_EQ(0, umad_status(self->umad));
	EXPECT_EQ(METHOD_GET_RESP, self->mad->method);
	EXPECT_EQ(0, memcmp(d + 8, self->p[3].gid, 8));	/* GidPrefix */
	EXPECT_EQ(self->p[3].lid, d[16] << 8 | d[17]);		/* LID */
	EXPECT_EQ(130, self->p[3].lid);	/* base_lid 1 + 128 * 1 + 2 - 1 */
	EXPECT_EQ(1, d[18] << 8 | d[19]);			/* MasterSMLID */
	EXPECT_EQ(self->p[3].cap_mask,
		  (uint32_t)d[20] << 24 | d[21] << 16 | d[22] << 8 | d[23]);
	EXPECT_EQ(2, d[28]);			/* LocalPortNum */
	EXPECT_EQ(4, d[32] & 0xf);		/* PortState: Active */
	EXPECT_EQ(5, d[33] >> 4);		/* PortPhysicalState: LinkUp */
	EXPECT_EQ(0, d[34] & 7);		/* LMC */
}

TEST_F(lo, lid_routed_port_info_of_another_port)
{
	int agent = umad_register(self->fd[0], CLASS_SUBN_LID, 1, 0, NULL);
	const uint8_t *d = self->mad->data;

	ASSERT_LE(0, agent) TH_LOG("register: %s", strerror(-agent));
	/* iblo0 port 1 asks iblo1 port 2, by its LID. */
	new_mad(self, CLASS_SUBN_LID, METHOD_GET, ATTR_PORT_INFO,
		self->p[3].lid, 0);
	ASSERT_EQ(agent, send_recv(self, 0, agent, ANSWERED_MS, 0));
	ASSERT_EQ(0, umad_status(self->umad));
	EXPECT_EQ(METHOD_GET_RESP, self->mad->method);
	EXPECT_EQ(0, be16toh(self->mad->status));
	EXPECT_EQ(self->tid, TID_LOW(self->mad));
	EXPECT_EQ(self->p[3].lid, d[16] << 8 | d[17]);
	EXPECT_EQ(2, d[28]);
	/* It came from there, QP0. */
	EXPECT_EQ(self->p[3].lid, be16toh(umad_get_mad_addr(self->umad)->lid));
	EXPECT_EQ(0u, be32toh(umad_get_mad_addr(self->umad)->qpn));
}

TEST_F(lo, lid_routed_node_description)
{
	int agent = umad_register(self->fd[0], CLASS_SUBN_LID, 1, 0, NULL);

	ASSERT_LE(0, agent) TH_LOG("register: %s", strerror(-agent));
	new_mad(self, CLASS_SUBN_LID, METHOD_GET, ATTR_NODE_DESC,
		self->p[2].lid, 0);
	ASSERT_EQ(agent, send_recv(self, 0, agent, ANSWERED_MS, 0));
	ASSERT_EQ(0, umad_status(self->umad));
	EXPECT_EQ(METHOD_GET_RESP, self->mad->method);
	EXPECT_STREQ("ib_loopback iblo1", (char *)self->mad->data);
}

/* Registers a GET server on port s and a client on port c. */
static void gsi_pair(struct __test_metadata *_metadata,
		     struct _test_data_lo *self, int c, int s, int *client,
		     int *server)
{
	long get_only[16 / sizeof(long)] = { 1L << METHOD_GET };

	*server = umad_register(self->fd[s], VENDOR_CLASS, 1, 0, get_only);
	ASSERT_LE(0, *server) TH_LOG("server register: %s", strerror(-*server));
	*client = umad_register(self->fd[c], VENDOR_CLASS, 1, 0, NULL);
	ASSERT_LE(0, *client) TH_LOG("client register: %s", strerror(-*client));
}

/* The server on port s answers the GET in self->umad. */
static int answer(struct _test_data_lo *self, int s, int server)
{
	self->mad->method = METHOD_GET_RESP;
	umad_get_mad_addr(self->umad)->qkey = htobe32(QP1_QKEY);
	return umad_send(self->fd[s], server, self->umad, MAD_SIZE, 0, 0);
}

TEST_F(lo, gsi_get_by_lid_without_grh)
{
	ib_mad_addr_t *from = umad_get_mad_addr(self->umad);
	int client, server;

	gsi_pair(_metadata, self, 0, 3, &client, &server);
	new_mad(self, VENDOR_CLASS, METHOD_GET, 0x10, self->p[3].lid, 1);
	ASSERT_EQ(0, umad_send(self->fd[0], client, self->umad, MAD_SIZE,
			       ANSWERED_MS, 0));
	ASSERT_EQ(server, recv_on(self, 3, 5000));
	EXPECT_EQ(METHOD_GET, self->mad->method);
	EXPECT_EQ(self->tid, TID_LOW(self->mad));
	EXPECT_EQ(self->p[0].lid, be16toh(from->lid));
	EXPECT_EQ(1u, be32toh(from->qpn));
	EXPECT_EQ(0, from->grh_present);
	EXPECT_EQ(0, from->sl);
	EXPECT_EQ(0, umad_get_pkey(self->umad));
	ASSERT_EQ(0, answer(self, 3, server));
	ASSERT_EQ(client, recv_on(self, 0, 5000));
	EXPECT_EQ(0, umad_status(self->umad));
	EXPECT_EQ(METHOD_GET_RESP, self->mad->method);
	EXPECT_EQ(self->tid, TID_LOW(self->mad));
	EXPECT_EQ(self->p[3].lid, be16toh(from->lid));
}

TEST_F(lo, gsi_get_with_grh_and_p_key)
{
	ib_mad_addr_t *from = umad_get_mad_addr(self->umad);
	ib_mad_addr_t grh = { 0 };
	int client, server;

	gsi_pair(_metadata, self, 1, 2, &client, &server);
	new_mad(self, VENDOR_CLASS, METHOD_GET, 0x10, self->p[2].lid, 1);
	memcpy(grh.gid, self->p[2].gid, 16);
	grh.hop_limit = 64;
	grh.traffic_class = 0x20;
	grh.flow_label = 0x12345;	/* host order here, network order back */
	ASSERT_EQ(0, umad_set_grh(self->umad, &grh));
	ASSERT_EQ(0, umad_set_pkey(self->umad, 1));	/* 0x8001 */
	ASSERT_EQ(0, umad_send(self->fd[1], client, self->umad, MAD_SIZE,
			       ANSWERED_MS, 0));
	ASSERT_EQ(server, recv_on(self, 2, 5000));
	EXPECT_EQ(METHOD_GET, self->mad->method);
	EXPECT_EQ(1, from->grh_present);
	EXPECT_EQ(0, memcmp(from->gid, self->p[1].gid, 16));
	EXPECT_EQ(0x20, from->traffic_class);
	EXPECT_EQ(0x12345u, be32toh(from->flow_label));
	EXPECT_EQ(self->p[1].lid, be16toh(from->lid));
	EXPECT_EQ(1, umad_get_pkey(self->umad));
	ASSERT_EQ(0, answer(self, 2, server));
	ASSERT_EQ(client, recv_on(self, 1, 5000));
	EXPECT_EQ(0, umad_status(self->umad));
	EXPECT_EQ(METHOD_GET_RESP, self->mad->method);
	EXPECT_EQ(1, from->grh_present);
	EXPECT_EQ(0, memcmp(from->gid, self->p[2].gid, 16));
}

TEST_F(lo, get_to_a_lid_nobody_has_is_lost_and_times_out)
{
	long tx = stat_of("tx"), lost = stat_of("lost");
	int client, server;

	gsi_pair(_metadata, self, 0, 3, &client, &server);
	new_mad(self, VENDOR_CLASS, METHOD_GET, 0x10, NOBODY_LID, 1);
	ASSERT_EQ(client, send_recv(self, 0, client, 200, 0));
	EXPECT_EQ(ETIMEDOUT, umad_status(self->umad));
	EXPECT_EQ(tx + 1, stat_of("tx"));
	EXPECT_EQ(lost + 1, stat_of("lost"));
}

TEST_F(lo, unanswered_get_times_out)
{
	int client, server;

	gsi_pair(_metadata, self, 0, 3, &client, &server);
	new_mad(self, VENDOR_CLASS, METHOD_GET, 0x10, self->p[3].lid, 1);
	ASSERT_EQ(0, umad_send(self->fd[0], client, self->umad, MAD_SIZE,
			       300, 0));
	ASSERT_EQ(server, recv_on(self, 3, 5000));	/* and no answer */
	ASSERT_EQ(client, recv_on(self, 0, 5000));
	EXPECT_EQ(ETIMEDOUT, umad_status(self->umad));
	EXPECT_EQ(self->tid, TID_LOW(self->mad));
}

TEST_F(lo, drop_next_loses_the_first_try_and_the_retry_is_answered)
{
	long dropped = stat_of("dropped");
	int client, server;

	gsi_pair(_metadata, self, 0, 3, &client, &server);
	ASSERT_EQ(0, write_knob("drop_next", 1));
	new_mad(self, VENDOR_CLASS, METHOD_GET, 0x10, self->p[3].lid, 1);
	/*
	 * The test waits out the first try's timeout, and the server must
	 * answer within the retry's: 2 s for a read and a write of this
	 * process, milliseconds even on the slowest guest. (More retries
	 * would not help: the server would see a second one.)
	 */
	ASSERT_EQ(0, umad_send(self->fd[0], client, self->umad, MAD_SIZE,
			       2000, 1));
	ASSERT_EQ(server, recv_on(self, 3, 5000));
	ASSERT_EQ(0, answer(self, 3, server));
	ASSERT_EQ(client, recv_on(self, 0, 5000));
	EXPECT_EQ(0, umad_status(self->umad));
	EXPECT_EQ(METHOD_GET_RESP, self->mad->method);
	EXPECT_EQ(dropped + 1, stat_of("dropped"));
	EXPECT_EQ(0UL, read_number(LOOPBACK_DBG "drop_next"));
	/* The server saw the retry only. */
	EXPECT_EQ(-ETIMEDOUT, recv_on(self, 3, 200));
}

#define OUTSTANDING 20000
/*
 * Longer than the test may run (300 s): no request times out before the
 * duplicates are tried, which on the debug kernel the first ones did with a
 * minute's timeout, and were rightly taken again.
 */
#define OUTSTANDING_TIMEOUT_MS 600000

/*
 * Twenty thousand requests outstanding on one file (every packet dropped,
 * ten minutes' timeout): each write is taken, the duplicate-TID rule still
 * holds once the send table has grown as far as it grows, and closing the
 * file with all of them outstanding is clean (a kernel report, an
 * allocation warning among them, fails the run).
 */
TEST_F_TIMEOUT(lo, many_thousands_of_sends_outstanding, 300)
{
	uint32_t first = self->tid + 1;
	int client, server;

	gsi_pair(_metadata, self, 0, 3, &client, &server);
	ASSERT_EQ(0, write_knob("drop_every_nth", 1));
	for (int i = 0; i < OUTSTANDING; i++) {
		new_mad(self, VENDOR_CLASS, METHOD_GET, 0x10, self->p[3].lid, 1);
		ASSERT_EQ(0, umad_send(self->fd[0], client, self->umad, MAD_SIZE,
				       OUTSTANDING_TIMEOUT_MS, 0))
			TH_LOG("send %d", i);
	}
	for (uint32_t tid = first; tid < first + OUTSTANDING; tid += 997) {
		new_mad(self, VENDOR_CLASS, METHOD_GET, 0x10, self->p[3].lid, 1);
		self->mad->tid = htobe64(tid);
		EXPECT_GT(0, umad_send(self->fd[0], client, self->umad, MAD_SIZE,
				       OUTSTANDING_TIMEOUT_MS, 0))
			TH_LOG("TID %u taken twice", tid);
	}
}

TEST_F(lo, drop_every_nth_1_loses_every_try)
{
	long dropped = stat_of("dropped");
	int client, server;

	gsi_pair(_metadata, self, 0, 3, &client, &server);
	ASSERT_EQ(0, write_knob("drop_every_nth", 1));
	new_mad(self, VENDOR_CLASS, METHOD_GET, 0x10, self->p[3].lid, 1);
	ASSERT_EQ(client, send_recv(self, 0, client, 200, 2));
	EXPECT_EQ(ETIMEDOUT, umad_status(self->umad));
	EXPECT_EQ(dropped + 3, stat_of("dropped"));
	EXPECT_EQ(-ETIMEDOUT, recv_on(self, 3, 100));
}

TEST_F(lo, drop_every_nth_2_drops_the_second_and_fourth)
{
	uint32_t first = self->tid + 1;
	int client, server;

	gsi_pair(_metadata, self, 0, 3, &client, &server);
	ASSERT_EQ(0, write_knob("drop_every_nth", 2));
	for (int i = 0; i < 4; i++) {
		new_mad(self, VENDOR_CLASS, METHOD_GET, 0x10, self->p[3].lid, 1);
		ASSERT_EQ(0, umad_send(self->fd[0], client, self->umad,
				       MAD_SIZE, 0, 0));
	}
	ASSERT_EQ(server, recv_on(self, 3, 5000));
	EXPECT_EQ(first, TID_LOW(self->mad));
	ASSERT_EQ(server, recv_on(self, 3, 5000));
	EXPECT_EQ(first + 2, TID_LOW(self->mad));
	EXPECT_EQ(-ETIMEDOUT, recv_on(self, 3, 300));
}

TEST_F(lo, delay_ms_delays_every_delivery)
{
	struct timespec start;
	int client, server;

	gsi_pair(_metadata, self, 0, 3, &client, &server);
	ASSERT_EQ(0, write_knob("delay_ms", 400));

	/*
	 * The GET gets there after 400 ms: a 100 ms timeout is too short.
	 * The delays are lower bounds, on the clock of the jiffies they run on.
	 */
	new_mad(self, VENDOR_CLASS, METHOD_GET, 0x10, self->p[3].lid, 1);
	jiffies_clock(&start);
	ASSERT_EQ(client, send_recv(self, 0, client, 100, 0));
	EXPECT_EQ(ETIMEDOUT, umad_status(self->umad));
	ASSERT_EQ(server, recv_on(self, 3, 5000));
	EXPECT_LE(400, jiffies_waited_ms(&start));

	/* With time enough the answer comes, two deliveries later. */
	new_mad(self, VENDOR_CLASS, METHOD_GET, 0x10, self->p[3].lid, 1);
	jiffies_clock(&start);
	ASSERT_EQ(0, umad_send(self->fd[0], client, self->umad, MAD_SIZE,
			       ANSWERED_MS, 0));
	ASSERT_EQ(server, recv_on(self, 3, 5000));
	ASSERT_EQ(0, answer(self, 3, server));
	ASSERT_EQ(client, recv_on(self, 0, 5000));
	EXPECT_EQ(0, umad_status(self->umad));
	EXPECT_EQ(METHOD_GET_RESP, self->mad->method);
	EXPECT_LE(800, jiffies_waited_ms(&start));
}

/*
 * A SubnAdmGetTable from iblo0 port 1 to a server on iblo1 port 2, and its
 * five-segment response through the kernel's RMPP, every nth packet on the
 * fabric dropped (0: none).
 */
static void rmpp_get_table(struct __test_metadata *_metadata,
			   struct _test_data_lo *self, int nth)
{
	long get_table[16 / sizeof(long)] = { 0 };
	int client, server, len, ret, bad;
	ib_mad_addr_t *from;
	uint8_t *big, *m;

	get_table[METHOD_GET_TABLE / (8 * sizeof(long))] |=
		1L << (METHOD_GET_TABLE % (8 * sizeof(long)));
	server = umad_register(self->fd[3], CLASS_SA, 2, 1, get_table);
	ASSERT_LE(0, server) TH_LOG("server register: %s", strerror(-server));
	client = umad_register(self->fd[0], CLASS_SA, 2, 1, NULL);
	ASSERT_LE(0, client) TH_LOG("client register: %s", strerror(-client));
	big = calloc(1, umad_size() + BIG_MAD);
	ASSERT_NE(NULL, big);
	m = umad_get_mad(big);
	from = umad_get_mad_addr(big);

	m[0] = 1;
	m[1] = CLASS_SA;
	m[2] = 2;
	m[3] = METHOD_GET_TABLE;
	*(__be64 *)(m + 8) = htobe64(0x7ab1e);
	m[17] = 0x11;			/* NodeRecord */
	m[24] = 1;			/* RMPP version, not active */
	umad_set_addr(big, self->p[3].lid, 1, 0, QP1_QKEY);
	ASSERT_EQ(0, write_knob("drop_every_nth", nth));
	ASSERT_EQ(0, write_knob("log_packets", 1));
	/*
	 * One try: a retried GET would shift the drop pattern. The answer
	 * ends it, however long the RMPP transfer with its retries takes.
	 */
	ASSERT_EQ(0, umad_send(self->fd[0], client, big, MAD_SIZE, ANSWERED_MS, 0));

	len = BIG_MAD;
	ret = umad_recv(self->fd[3], big, &len, 20000);
	ASSERT_EQ(server, ret) TH_LOG("server recv: %s", strerror(-ret));
	ASSERT_EQ(METHOD_GET_TABLE, m[3]);

	/* The answer: 1000 bytes of table, segmented by the kernel. */
	m[3] = METHOD_GET_TABLE_RESP;
	m[25] = RMPP_TYPE_DATA;
	m[26] = RMPP_FLAG_ACTIVE;
	for (int i = 0; i < RMPP_DATA_LEN; i++)
		m[SA_HDR_LEN + i] = i * 7 + 1;
	from->qkey = htobe32(QP1_QKEY);
	/*
	 * Above 2 s, so that mad_rmpp.c's send_next_seg() rearms the ACK
	 * timer (2 s) with each segment: with 2 s or less it leaves the
	 * absolute expiry of the previous wait in place, and a window sent
	 * after a retry then waits for its ACK practically for ever.
	 */
	ret = umad_send(self->fd[3], server, big, SA_HDR_LEN + RMPP_DATA_LEN,
			3000, 5);
	ASSERT_EQ(0, ret) TH_LOG("server send: %s", strerror(-ret));

	/* A transfer that fails ends in the GET's timeout report. */
	memset(big, 0, umad_size() + BIG_MAD);
	len = BIG_MAD;
	ret = umad_recv(self->fd[0], big, &len, ANSWERED_MS + 5000);
	ASSERT_EQ(client, ret) TH_LOG("client recv: %s", strerror(-ret));
	EXPECT_EQ(0, umad_status(big));
	EXPECT_EQ(METHOD_GET_TABLE_RESP, m[3]);
	EXPECT_EQ(0x7ab1eu, (uint32_t)be64toh(*(__be64 *)(m + 8)));
	ASSERT_LE(SA_HDR_LEN + RMPP_DATA_LEN, len);
	for (bad = 0; bad < RMPP_DATA_LEN; bad++)
		if (m[SA_HDR_LEN + bad] != (uint8_t)(bad * 7 + 1))
			break;
	EXPECT_EQ(RMPP_DATA_LEN, bad) TH_LOG("table differs at byte %d", bad);
	free(big);
}

TEST_F(lo, rmpp_response_in_five_segments)
{
	long tx = stat_of("tx");

	rmpp_get_table(_metadata, self, 0);
	/* GET, segment 1, ACK, segments 2-5 (then the last ACK). */
	EXPECT_LE(tx + 7, stat_of("tx"));
}

/*
 * Every third packet lost: the first ACK (the sender times out and resends
 * segment 1), then segments 2 and 5 of the window (it times out again and
 * resends 2-5, of which 4 is lost but was there already). With every
 * fourth, segment 2 would be lost in every round of four.
 */
TEST_F(lo, rmpp_response_with_every_third_packet_dropped)
{
	long dropped = stat_of("dropped");

	rmpp_get_table(_metadata, self, 3);
	EXPECT_LE(dropped + 2, stat_of("dropped"));
}

TEST_F(lo, device_removal_and_unload_with_mads_on_the_wire)
{
	long lost = stat_of("lost");
	struct timespec start;
	int client, server;

	gsi_pair(_metadata, self, 0, 3, &client, &server);
	ASSERT_EQ(0, write_knob("delay_ms", 2000));
	jiffies_clock(&start);
	for (int i = 0; i < 4; i++) {
		new_mad(self, VENDOR_CLASS, METHOD_GET, 0x10, self->p[3].lid, 1);
		ASSERT_EQ(0, umad_send(self->fd[0], client, self->umad,
				       MAD_SIZE, 0, 0));
	}
	/*
	 * iblo1 goes while they are on the wire: they find nobody. A guest
	 * whose removal outlasts most of their delay (on the clock of the
	 * jiffies it runs on) cannot tell: SKIP, not fail.
	 */
	ASSERT_EQ(0, write_file("remove_device", "iblo1"));
	EXPECT_NE(0, access(SYS_IB_CLASS "/iblo1", F_OK));
	if (jiffies_waited_ms(&start) > 1500) {
		/* A failure above stays one: a SKIP would hide it. */
		if (_metadata->exit_code == KSFT_PASS)
			SKIP(return, "removing iblo1 took more than the delay");
		return;
	}
	/* Lost once due: the wait ends then, or 30 s (in sleeps) after. */
	for (int i = 0; i < 3000 && stat_of("lost") < lost + 4; i++)
		usleep(10 * 1000);
	EXPECT_EQ(lost + 4, stat_of("lost"));
	EXPECT_EQ(-ENODEV, write_file("remove_device", "iblo1"));

	/* More on the wire when the module goes (teardown): no leak. */
	ASSERT_EQ(0, write_knob("delay_ms", 10000));
	for (int i = 0; i < 4; i++) {
		new_mad(self, VENDOR_CLASS, METHOD_GET, 0x10, self->p[1].lid, 1);
		ASSERT_EQ(0, umad_send(self->fd[0], client, self->umad,
				       MAD_SIZE, 0, 0));
	}
}

/*
 * ib_free_cq() cancels the CQ's work before the driver's destroy_cq, so a
 * driver must have told the consumer of every completion of a QP before its
 * destroy_qp returns; a completion handler called later queues the work of
 * a CQ about to be freed. Here the worker tells the MAD CQ of iblo1's port 1
 * a second late, and iblo1 goes in that second (port 1: the MAD layer closes
 * ports in order, and a later port's CQ would wait out the delay in
 * ib_loopback's destroy_cq). A debug kernel (KASAN) reports the use after
 * free if ib_loopback's destroy_qp does not wait for the handler.
 */
TEST_F(lo, device_removal_while_a_receive_completion_is_being_signalled)
{
	long delivered = stat_of("delivered");
	int client, server, waited_ms = 0;

	gsi_pair(_metadata, self, 0, 2, &client, &server);
	ASSERT_EQ(0, write_knob("notify_delay_ms", 1000));
	new_mad(self, VENDOR_CLASS, METHOD_GET, 0x10, self->p[2].lid, 1);
	ASSERT_EQ(0, umad_send(self->fd[0], client, self->umad, MAD_SIZE, 0, 0));
	/*
	 * The send completion is told after a second, then it is delivered:
	 * the wait ends then, or 30 s (counted in sleeps, so no less) later.
	 * A guest slow to see it removes iblo1 after the receive completion
	 * was told, which passes without testing the race, never fails.
	 */
	while (stat_of("delivered") == delivered && waited_ms < 30000) {
		usleep(10000);
		waited_ms += 10;
	}
	ASSERT_EQ(delivered + 1, stat_of("delivered"));
	ASSERT_EQ(0, write_file("remove_device", "iblo1"));
	EXPECT_NE(0, access(SYS_IB_CLASS "/iblo1", F_OK));
	EXPECT_EQ(0, write_knob("notify_delay_ms", 0));
}

/*
 * The loopback ports' SMA and PMA, as an SM and the diags use them
 * (umad_opensm.sh runs the real ones): SubnSet, error statuses, M_Key, the
 * port state machine, and counters.
 */
#define METHOD_SET 0x02
#define ATTR_SM_INFO 0x0020
#define ATTR_GUID_INFO 0x0014
#define ATTR_PKEY_TABLE 0x0016
#define ATTR_SL_TO_VL_TABLE 0x0017
#define ATTR_VL_ARB_TABLE 0x0018
#define ATTR_LINEAR_FORWARD_TABLE 0x0019
#define CLASS_PERF 0x04
#define ATTR_PORT_COUNTERS 0x0012
#define STATUS_UNSUPPORTED_ATTRIBUTE 0x000c
#define STATUS_INVALID_VALUE 0x001c
#define PORT_STATE_DOWN 1
#define PORT_STATE_INIT 2
#define PORT_STATE_ARMED 3
#define PORT_STATE_ACTIVE 4
/* PortInfo offsets. */
#define PI_LID 16
#define PI_STATE 32
#define PI_PHYS_STATE 33
#define PI_LMC 34
#define PI_MKEY_VIOLATIONS 44

/*
 * Sends self->umad from port i as agent, and unregisters the agent: the
 * status of the answer, or -errno (-ETIMEDOUT: none came).
 */
static int exchange(struct _test_data_lo *self, int i, int agent)
{
	int ret = send_recv(self, i, agent, self->wait_ms, 0);

	umad_unregister(self->fd[i], agent);
	if (ret != agent)
		return ret < 0 ? ret : -EPROTO;
	if (umad_status(self->umad))
		return -umad_status(self->umad);
	return be16toh(self->mad->status);
}

/*
 * A directed-route SMP (data: its 64 bytes, or none) out of port i, to
 * itself (hops 0) or to its cabled peer (hops 1), with M_Key mkey. The
 * response's status without the D bit, or -errno (-ETIMEDOUT: no answer).
 */
static int dr_smp(struct _test_data_lo *self, int i, int hops, int method,
		  int attr, uint32_t mod, const uint8_t *data, uint64_t mkey)
{
	uint8_t path[2] = { 0, self->p[i].port };
	int agent = umad_register(self->fd[i], CLASS_SUBN_DR, 1, 0, NULL);
	int ret;

	if (agent < 0)
		return agent;
	new_dr_smp(self, attr, hops ? 1 : 0, path);
	self->mad->method = method;
	self->mad->attr_mod = htobe32(mod);
	self->mad->mkey = htobe64(mkey);
	if (data)
		memcpy(self->mad->data, data, sizeof(self->mad->data));
	ret = exchange(self, i, agent);
	return ret < 0 ? ret : ret & 0x7fff;
}

/* A LID-routed Get of class/attr from port i to dlid, as dr_smp() answers. */
static int lid_get(struct _test_data_lo *self, int i, int class, int attr,
		   int dlid)
{
	int qpn = class == CLASS_SUBN_LID ? 0 : 1;
	int agent = umad_register(self->fd[i], class, 1, 0, NULL);

	if (agent < 0)
		return agent;
	new_mad(self, class, METHOD_GET, attr, dlid, qpn);
	return exchange(self, i, agent);
}

/*
 * The PortInfo of port i (hops 0) or its peer (hops 1) as an SM starts a
 * Set from it: what the Get said, PortState and PortPhysicalState "no
 * change".
 */
static void port_info_to_set(struct __test_metadata *_metadata,
			     struct _test_data_lo *self, int i, int hops,
			     uint8_t *pi)
{
	ASSERT_EQ(0, dr_smp(self, i, hops, METHOD_GET, ATTR_PORT_INFO, 0, NULL, 0));
	memcpy(pi, self->mad->data, 64);
	pi[PI_STATE] &= 0xf0;
	pi[PI_PHYS_STATE] &= 0x0f;
}

static void set_lid(uint8_t *pi, int lid)
{
	pi[PI_LID] = lid >> 8;
	pi[PI_LID + 1] = lid;
}

static int port_number(const struct lo_port *p, const char *attr)
{
	char path[256];

	snprintf(path, sizeof(path), SYS_IB_CLASS "/%s/ports/%d/%s", p->ca,
		 p->port, attr);
	return read_number(path);
}

TEST_F(lo, an_attribute_the_sma_lacks_gets_status_unsupported)
{
	EXPECT_EQ(STATUS_UNSUPPORTED_ATTRIBUTE,
		  dr_smp(self, 0, 0, METHOD_GET, ATTR_LINEAR_FORWARD_TABLE, 0,
			 NULL, 0));
	EXPECT_EQ(METHOD_GET_RESP, self->mad->method);
	EXPECT_EQ(SMP_DIRECTION | STATUS_UNSUPPORTED_ATTRIBUTE,
		  be16toh(self->mad->status));
	/* A read-only attribute cannot be set. */
	EXPECT_EQ(STATUS_UNSUPPORTED_ATTRIBUTE,
		  dr_smp(self, 0, 1, METHOD_SET, ATTR_NODE_INFO, 0,
			 self->mad->data, 0));
}

TEST_F(lo, port_info_set_gives_the_peer_a_new_lid)
{
	int old = self->p[2].lid;
	uint8_t pi[64];

	port_info_to_set(_metadata, self, 0, 1, pi);
	set_lid(pi, 0x300);
	ASSERT_EQ(0, dr_smp(self, 0, 1, METHOD_SET, ATTR_PORT_INFO, 0, pi, 0));
	EXPECT_EQ(0x300, self->mad->data[PI_LID] << 8 | self->mad->data[PI_LID + 1]);
	EXPECT_EQ(0x300, port_number(&self->p[2], "lid"));
	/* By LID, the new one reaches it and the old one nobody. */
	EXPECT_EQ(0, lid_get(self, 0, CLASS_SUBN_LID, ATTR_NODE_INFO, 0x300));
	EXPECT_EQ(0, memcmp(self->mad->data + 20, self->p[2].gid + 8, 8));
	self->wait_ms = SILENCE_MS;
	EXPECT_EQ(-ETIMEDOUT, lid_get(self, 0, CLASS_SUBN_LID, ATTR_NODE_INFO, old));
}

TEST_F(lo, an_invalid_port_info_set_changes_nothing)
{
	int old = self->p[2].lid;
	uint8_t pi[64];

	port_info_to_set(_metadata, self, 0, 1, pi);
	set_lid(pi, 0x300);
	/* No SM may set a port to Init, nor ACTIVE from INIT. */
	pi[PI_STATE] |= PORT_STATE_INIT;
	EXPECT_EQ(STATUS_INVALID_VALUE,
		  dr_smp(self, 0, 1, METHOD_SET, ATTR_PORT_INFO, 0, pi, 0));
	EXPECT_EQ(old, self->mad->data[PI_LID] << 8 | self->mad->data[PI_LID + 1]);
	EXPECT_EQ(old, port_number(&self->p[2], "lid"));
	EXPECT_EQ(PORT_STATE_ACTIVE, port_number(&self->p[2], "state"));
}

TEST_F(lo, port_down_retrains_the_link_and_only_smps_pass_until_active)
{
	int client, server;
	uint8_t pi[64];

	port_info_to_set(_metadata, self, 0, 1, pi);
	pi[PI_STATE] |= PORT_STATE_DOWN;
	ASSERT_EQ(0, dr_smp(self, 0, 1, METHOD_SET, ATTR_PORT_INFO, 0, pi, 0));
	/* Both ends come back up, INIT. */
	EXPECT_EQ(PORT_STATE_INIT, self->mad->data[PI_STATE] & 0xf);
	EXPECT_EQ(PORT_STATE_INIT, port_number(&self->p[0], "state"));
	EXPECT_EQ(PORT_STATE_INIT, port_number(&self->p[2], "state"));

	gsi_pair(_metadata, self, 0, 2, &client, &server);
	new_mad(self, VENDOR_CLASS, METHOD_GET, 0x10, self->p[2].lid, 1);
	ASSERT_EQ(client, send_recv(self, 0, client, 200, 0));
	EXPECT_EQ(ETIMEDOUT, umad_status(self->umad));
	/* ACTIVE only from ARMED. */
	pi[PI_STATE] = (pi[PI_STATE] & 0xf0) | PORT_STATE_ACTIVE;
	EXPECT_EQ(STATUS_INVALID_VALUE,
		  dr_smp(self, 0, 1, METHOD_SET, ATTR_PORT_INFO, 0, pi, 0));
	for (int state = PORT_STATE_ARMED; state <= PORT_STATE_ACTIVE; state++) {
		for (int hops = 0; hops <= 1; hops++) {
			port_info_to_set(_metadata, self, 0, hops, pi);
			pi[PI_STATE] |= state;
			ASSERT_EQ(0, dr_smp(self, 0, hops, METHOD_SET,
					    ATTR_PORT_INFO, 0, pi, 0));
			EXPECT_EQ(state, self->mad->data[PI_STATE] & 0xf);
		}
	}
	EXPECT_EQ(PORT_STATE_ACTIVE, port_number(&self->p[0], "state"));
	EXPECT_EQ(PORT_STATE_ACTIVE, port_number(&self->p[2], "state"));
	new_mad(self, VENDOR_CLASS, METHOD_GET, 0x10, self->p[2].lid, 1);
	ASSERT_EQ(0, umad_send(self->fd[0], client, self->umad, MAD_SIZE, 2000, 0));
	EXPECT_EQ(server, recv_on(self, 2, 5000));
}

TEST_F(lo, m_key_protect_bits_2_hide_the_port_from_other_keys)
{
	const uint64_t mkey = 0x1122334455667788ULL;
	uint8_t pi[64];

	port_info_to_set(_metadata, self, 0, 1, pi);
	for (int i = 0; i < 8; i++)
		pi[i] = mkey >> (56 - 8 * i);
	pi[PI_LMC] = 2 << 6;	/* M_KeyProtectBits 2 */
	ASSERT_EQ(0, dr_smp(self, 0, 1, METHOD_SET, ATTR_PORT_INFO, 0, pi, 0));
	/* Without the key: no answer, to a Get or a Set. */
	self->wait_ms = SILENCE_MS;
	EXPECT_EQ(-ETIMEDOUT, dr_smp(self, 0, 1, METHOD_GET, ATTR_NODE_INFO, 0,
				     NULL, 0));
	EXPECT_EQ(-ETIMEDOUT, dr_smp(self, 0, 1, METHOD_SET, ATTR_PORT_INFO, 0,
				     pi, mkey + 1));
	self->wait_ms = ANSWERED_MS;
	/* With it, the port answers, and counted both violations. */
	ASSERT_EQ(0, dr_smp(self, 0, 1, METHOD_GET, ATTR_PORT_INFO, 0, NULL,
			    mkey));
	EXPECT_EQ(2, self->mad->data[PI_MKEY_VIOLATIONS] << 8 |
		     self->mad->data[PI_MKEY_VIOLATIONS + 1]);
	EXPECT_EQ(0, memcmp(self->mad->data, pi, 8));
}

TEST_F(lo, lmc_gives_a_port_a_range_of_lids)
{
	uint8_t pi[64];

	port_info_to_set(_metadata, self, 0, 1, pi);
	set_lid(pi, 0x400);
	pi[PI_LMC] = 2;
	ASSERT_EQ(0, dr_smp(self, 0, 1, METHOD_SET, ATTR_PORT_INFO, 0, pi, 0));
	EXPECT_EQ(2, port_number(&self->p[2], "lid_mask_count"));
	for (int lid = 0x400; lid < 0x404; lid++) {
		EXPECT_EQ(0, lid_get(self, 0, CLASS_SUBN_LID, ATTR_NODE_INFO, lid))
			TH_LOG("LID 0x%x", lid);
	}
	self->wait_ms = SILENCE_MS;
	EXPECT_EQ(-ETIMEDOUT, lid_get(self, 0, CLASS_SUBN_LID, ATTR_NODE_INFO, 0x404));
}

TEST_F(lo, p_key_table_set_shows_in_sysfs)
{
	char path[256], buf[32];
	uint8_t table[64] = { 0xff, 0xff, 0x80, 0x05 };

	ASSERT_EQ(0, dr_smp(self, 0, 1, METHOD_SET, ATTR_PKEY_TABLE, 0, table, 0));
	EXPECT_EQ(0, memcmp(self->mad->data, table, 8));
	snprintf(path, sizeof(path), SYS_IB_CLASS "/iblo1/ports/1/pkeys/1");
	ASSERT_EQ(0, read_attr(path, buf, sizeof(buf)));
	EXPECT_STREQ("0x8005", buf);
	/* Block 1 would hold P_Keys 32-63: the table has 4. */
	EXPECT_EQ(STATUS_INVALID_VALUE,
		  dr_smp(self, 0, 1, METHOD_GET, ATTR_PKEY_TABLE, 1, NULL, 0));
}

TEST_F(lo, sl_to_vl_and_vl_arbitration_tables_keep_what_is_set)
{
	uint8_t sl2vl[64] = { 0x01, 0x23, 0x45, 0x67, 0x01, 0x23, 0x45, 0x67 };
	uint8_t arb[64] = { 0, 32, 1, 64, 2, 16, 3, 8 };

	ASSERT_EQ(0, dr_smp(self, 0, 1, METHOD_SET, ATTR_SL_TO_VL_TABLE, 0,
			    sl2vl, 0));
	ASSERT_EQ(0, dr_smp(self, 0, 1, METHOD_GET, ATTR_SL_TO_VL_TABLE, 0,
			    NULL, 0));
	EXPECT_EQ(0, memcmp(self->mad->data, sl2vl, 8));
	/* Blocks 1 (low priority) and 3 (high): 8 entries each, no more. */
	for (uint32_t block = 1; block <= 3; block += 2) {
		arb[1] = block;
		ASSERT_EQ(0, dr_smp(self, 0, 1, METHOD_SET, ATTR_VL_ARB_TABLE,
				    block << 16, arb, 0));
		ASSERT_EQ(0, dr_smp(self, 0, 1, METHOD_GET, ATTR_VL_ARB_TABLE,
				    block << 16, NULL, 0));
		EXPECT_EQ(0, memcmp(self->mad->data, arb, 16));
	}
	EXPECT_EQ(STATUS_INVALID_VALUE,
		  dr_smp(self, 0, 1, METHOD_GET, ATTR_VL_ARB_TABLE, 2 << 16, NULL, 0));
	/* GUIDInfo: one block, whose GUID 0 is the port GUID. */
	ASSERT_EQ(0, dr_smp(self, 0, 1, METHOD_GET, ATTR_GUID_INFO, 0, NULL, 0));
	EXPECT_EQ(0, memcmp(self->mad->data, self->p[2].gid + 8, 8));
	EXPECT_EQ(STATUS_INVALID_VALUE,
		  dr_smp(self, 0, 1, METHOD_GET, ATTR_GUID_INFO, 1, NULL, 0));
}

TEST_F(lo, sm_info_goes_to_the_ports_sm_and_without_one_is_unsupported)
{
	long get_only[16 / sizeof(long)] = { 1L << METHOD_GET };
	int sm, client;

	/* Without an SM on the port, the MAD layer answers for it. */
	EXPECT_EQ(STATUS_UNSUPPORTED_ATTRIBUTE,
		  lid_get(self, 0, CLASS_SUBN_LID, ATTR_SM_INFO, self->p[2].lid));
	sm = umad_register(self->fd[2], CLASS_SUBN_LID, 1, 0, get_only);
	ASSERT_LE(0, sm) TH_LOG("register: %s", strerror(-sm));
	client = umad_register(self->fd[0], CLASS_SUBN_LID, 1, 0, NULL);
	ASSERT_LE(0, client) TH_LOG("register: %s", strerror(-client));
	new_mad(self, CLASS_SUBN_LID, METHOD_GET, ATTR_SM_INFO, self->p[2].lid, 0);
	ASSERT_EQ(0, umad_send(self->fd[0], client, self->umad, MAD_SIZE, 500, 0));
	EXPECT_EQ(sm, recv_on(self, 2, 5000));
	EXPECT_EQ(ATTR_SM_INFO, be16toh(self->mad->attr_id));
}

/*
 * A PortCounters Get (or Set, clearing the counters in select) from port i
 * to port t's PMA, asking for port_select's; the response's status, or
 * -errno. The attribute starts at the MAD's byte 64.
 */
static int port_counters(struct _test_data_lo *self, int i, int t, int method,
			 int port_select, int select)
{
	int agent = umad_register(self->fd[i], CLASS_PERF, 1, 0, NULL);

	if (agent < 0)
		return agent;
	new_mad(self, CLASS_PERF, method, ATTR_PORT_COUNTERS, self->p[t].lid, 1);
	self->mad->data[1] = port_select;
	self->mad->data[2] = select >> 8;
	self->mad->data[3] = select;
	return exchange(self, i, agent);
}

static uint32_t counter32(struct _test_data_lo *self, int offset)
{
	const uint8_t *d = self->mad->data + offset;

	return (uint32_t)d[0] << 24 | d[1] << 16 | d[2] << 8 | d[3];
}

TEST_F(lo, pma_counters_count_packets_and_clear)
{
	uint32_t xmit[2], rcv[2];

	/*
	 * Of iblo1 port 1, asked by iblo0 port 1: each Get is a packet in,
	 * counted before the PMA reads the counters, and its answer one out,
	 * counted after. So the first Get counts itself, and between two
	 * Gets one packet at least came in and one went out, whatever else
	 * crossed the port.
	 */
	for (int round = 0; round < 2; round++) {
		ASSERT_EQ(0, port_counters(self, 0, 2, METHOD_GET,
					   self->p[2].port, 0));
		xmit[round] = counter32(self, 32);	/* PortXmitPkts */
		rcv[round] = counter32(self, 36);	/* PortRcvPkts */
		EXPECT_LE(rcv[round] * 72, counter32(self, 28))
			TH_LOG("PortRcvData in 4-octet words");
	}
	EXPECT_LE(1u, rcv[0]) TH_LOG("the Get did not count itself");
	EXPECT_LE(rcv[0] + 1, rcv[1]) TH_LOG("the second Get went uncounted");
	EXPECT_LE(xmit[0] + 1, xmit[1]) TH_LOG("the first Get's answer went uncounted");
	/* A Set with every CounterSelect bit clears them. */
	ASSERT_EQ(0, port_counters(self, 0, 2, METHOD_SET, self->p[2].port,
				   0xffff));
	EXPECT_EQ(0u, counter32(self, 36));
	EXPECT_EQ(0u, counter32(self, 32));
	EXPECT_EQ(0u, counter32(self, 28));
	EXPECT_EQ(0u, counter32(self, 24));
	/* Port 2's counters are not port 1's PMA to give. */
	EXPECT_EQ(STATUS_INVALID_VALUE,
		  port_counters(self, 0, 2, METHOD_GET, 2, 0));
}

TEST_HARNESS_MAIN
