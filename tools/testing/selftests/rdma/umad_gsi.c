// SPDX-License-Identifier: GPL-2.0
/*
 * GSI MADs between the pair's two ports (umad_test.h) through unchanged
 * libibumad (linked statically), as SA clients, ibacm, opensm and
 * infiniband-diags use it: umad_send, umad_recv, umad_poll, umad_status,
 * the register calls.
 */
#include <endian.h>
#include <pthread.h>
#include <time.h>
#include <infiniband/umad.h>

#include "../kselftest_harness.h"
#include "umad_test.h"

UMAD_NEEDS_PAIR

#define VENDOR_CLASS 0x09 /* vendor range 1: no OUI, no RMPP */
#define VENDOR2_CLASS 0x31 /* vendor range 2: OUI, RMPP */
#define METHOD_GET 0x01
#define METHOD_SET 0x02
#define METHOD_GET_RESP 0x81
#define RMPP_DATA 216 /* data bytes per RMPP segment: 256 - 40 */
#define QP1_QKEY 0x80010000
#define MAD_SIZE 256
#define TEST_TID_LOW 0x5eed1234u

/* The 24-byte common MAD header. */
struct mad_hdr {
	uint8_t base_version;
	uint8_t mgmt_class;
	uint8_t class_version;
	uint8_t method;
	__be16 status;
	__be16 class_specific;
	__be64 tid;
	__be16 attr_id;
	__be16 resv;
	__be32 attr_mod;
};

static uint8_t test_oui[3] = { 0x00, 0x14, 0x05 };

FIXTURE(gsi)
{
	const char *ca[2]; /* the pair's client and server */
	int fd[2];
	void *umad;
	struct umad_port_addr port[2]; /* the LID and GID of each port */
};

FIXTURE_SETUP(gsi)
{
	self->ca[0] = umad_pair()->client;
	self->ca[1] = umad_pair()->server;
	ASSERT_EQ(0, umad_init());
	for (int i = 0; i < 2; i++) {
		self->fd[i] = umad_open_port(self->ca[i], 1);
		ASSERT_LE(0, self->fd[i]) TH_LOG("umad_open_port(%s): %s",
						 self->ca[i],
						 strerror(-self->fd[i]));
	}
	self->umad = calloc(1, umad_size() + MAD_SIZE);
	ASSERT_NE(NULL, self->umad);
	for (int i = 0; i < 2; i++)
		ASSERT_EQ(0, read_port_addr(self->ca[i], 1, &self->port[i]));
}

FIXTURE_TEARDOWN(gsi)
{
	free(self->umad);
	for (int i = 0; i < 2; i++)
		if (self->fd[i] >= 0)
			umad_close_port(self->fd[i]);
	umad_done();
}

TEST_F(gsi, request_and_response_through_libibumad)
{
	long get_only[16 / sizeof(long)] = { 1L << METHOD_GET };
	struct mad_hdr *mad = umad_get_mad(self->umad);
	int client, server, len, agent;
	ib_mad_addr_t grh = { 0 };
	ib_mad_addr_t *from;

	server = umad_register(self->fd[1], VENDOR_CLASS, 1, 0, get_only);
	ASSERT_LE(0, server) TH_LOG("server register: %s", strerror(-server));
	client = umad_register(self->fd[0], VENDOR_CLASS, 1, 0, NULL);
	ASSERT_LE(0, client) TH_LOG("client register: %s", strerror(-client));

	/*
	 * GET from the first port to the second, to its LID (0 on RoCE) with
	 * a GRH, which RoCE needs.
	 */
	mad->base_version = 1;
	mad->mgmt_class = VENDOR_CLASS;
	mad->class_version = 1;
	mad->method = METHOD_GET;
	mad->tid = htobe64(TEST_TID_LOW);
	mad->attr_id = htobe16(0x10);
	ASSERT_EQ(0, umad_set_addr(self->umad, self->port[1].lid, 1, 0, QP1_QKEY));
	memcpy(grh.gid, self->port[1].gid, 16);
	grh.gid_index = 0;
	grh.hop_limit = 64;
	ASSERT_EQ(0, umad_set_grh(self->umad, &grh));
	ASSERT_EQ(0, umad_send(self->fd[0], client, self->umad, MAD_SIZE, ANSWERED_MS, 3));

	/* The server sees the GET, from QP1 of the first port, with a GRH. */
	memset(self->umad, 0, umad_size() + MAD_SIZE);
	len = MAD_SIZE;
	agent = umad_recv(self->fd[1], self->umad, &len, 5000);
	ASSERT_EQ(server, agent) TH_LOG("server recv: %s", strerror(-agent));
	ASSERT_EQ(MAD_SIZE, len);
	EXPECT_EQ(0, umad_status(self->umad));
	EXPECT_EQ(METHOD_GET, mad->method);
	EXPECT_EQ(VENDOR_CLASS, mad->mgmt_class);
	EXPECT_EQ(TEST_TID_LOW, (uint32_t)be64toh(mad->tid));
	from = umad_get_mad_addr(self->umad);
	EXPECT_EQ(1u, be32toh(from->qpn));
	EXPECT_EQ(1, from->grh_present);

	/* Answer on the address it came from. */
	mad->method = METHOD_GET_RESP;
	from->qkey = htobe32(QP1_QKEY);
	ASSERT_EQ(0, umad_send(self->fd[1], server, self->umad, MAD_SIZE, 0, 0));

	/* The client gets the response, matched to its request by TID. */
	memset(self->umad, 0, umad_size() + MAD_SIZE);
	len = MAD_SIZE;
	agent = umad_recv(self->fd[0], self->umad, &len, 5000);
	ASSERT_EQ(client, agent) TH_LOG("client recv: %s", strerror(-agent));
	EXPECT_EQ(0, umad_status(self->umad));
	EXPECT_EQ(METHOD_GET_RESP, mad->method);
	EXPECT_EQ(TEST_TID_LOW, (uint32_t)be64toh(mad->tid));
}

/* Addresses umad (a MAD of size bytes) to port `to` with the given header. */
static void address(struct _test_data_gsi *self, void *umad, int to, int class, int method,
		    uint64_t tid)
{
	struct mad_hdr *mad = umad_get_mad(umad);
	ib_mad_addr_t grh = { .hop_limit = 64 };

	memset(mad, 0, 40);
	mad->base_version = 1;
	mad->mgmt_class = class;
	mad->class_version = 1;
	mad->method = method;
	mad->tid = htobe64(tid);
	mad->attr_id = htobe16(0x10);
	if (class >= 0x30 && class <= 0x4f)
		memcpy((uint8_t *)mad + 37, test_oui, 3);
	umad_set_addr(umad, self->port[to].lid, 1, 0, QP1_QKEY);
	memcpy(grh.gid, self->port[to].gid, 16);
	umad_set_grh(umad, &grh);
}

/*
 * The server (fd[1]) reads the next MAD; returns its TID, 0 on failure.
 * Arrivals get 5 s here (30 for RMPP), which only a lost MAD runs out: one
 * crosses the pair in milliseconds, in well under a second on the slowest
 * guest.
 */
static uint64_t serve(struct _test_data_gsi *self, int server)
{
	struct mad_hdr *mad = umad_get_mad(self->umad);
	int len = MAD_SIZE;

	if (umad_recv(self->fd[1], self->umad, &len, 5000) != server)
		return 0;
	return be64toh(mad->tid);
}

static long elapsed_ms(const struct timespec *since)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (now.tv_sec - since->tv_sec) * 1000 + (now.tv_nsec - since->tv_nsec) / 1000000;
}

TEST_F(gsi, an_unanswered_request_comes_back_with_umad_status_etimedout)
{
	long get_only[16 / sizeof(long)] = { 1L << METHOD_GET };
	struct mad_hdr *mad = umad_get_mad(self->umad);
	int client, server, len;
	struct timespec start;
	uint64_t seen;

	server = umad_register(self->fd[1], VENDOR_CLASS, 1, 0, get_only);
	client = umad_register(self->fd[0], VENDOR_CLASS, 1, 0, NULL);
	ASSERT_LE(0, server);
	ASSERT_LE(0, client);
	address(self, self->umad, 1, VENDOR_CLASS, METHOD_GET, 0x7e57);
	jiffies_clock(&start);
	ASSERT_EQ(0, umad_send(self->fd[0], client, self->umad, MAD_SIZE, 200, 1));
	/* The server gets the request and its one resend, and stays silent. */
	seen = serve(self, server);
	ASSERT_NE((uint64_t)0, seen);
	EXPECT_EQ(seen, serve(self, server));

	memset(self->umad, 0, umad_size() + MAD_SIZE);
	len = MAD_SIZE;
	ASSERT_EQ(client, umad_recv(self->fd[0], self->umad, &len, 5000));
	/* A lower bound, on the clock the MAD layer's timers run on. */
	EXPECT_LE(400, jiffies_waited_ms(&start)) TH_LOG("timeout_ms x (retries + 1) not waited");
	EXPECT_EQ(ETIMEDOUT, umad_status(self->umad));
	EXPECT_EQ(24, len); /* the common header as sent */
	EXPECT_EQ(seen, be64toh(mad->tid));
	EXPECT_EQ(METHOD_GET, mad->method);
}

TEST_F(gsi, umad_send_of_a_duplicate_tid_fails_until_the_first_is_done)
{
	long get_only[16 / sizeof(long)] = { 1L << METHOD_GET };
	int client, len;

	/* A server that never answers (without one, the MAD layer would). */
	ASSERT_LE(0, umad_register(self->fd[1], VENDOR_CLASS, 1, 0, get_only));
	client = umad_register(self->fd[0], VENDOR_CLASS, 1, 0, NULL);
	ASSERT_LE(0, client);
	/*
	 * TID 7 stays outstanding for the test (closing ends it): its
	 * timeout is longer than the test may run, however slow the guest.
	 */
	address(self, self->umad, 1, VENDOR_CLASS, METHOD_GET, 7);
	ASSERT_EQ(0, umad_send(self->fd[0], client, self->umad, MAD_SIZE, 600000, 0));
	/* libibumad turns every failed write into -EIO, errno says why. */
	errno = 0;
	EXPECT_EQ(-EIO, umad_send(self->fd[0], client, self->umad, MAD_SIZE, 300, 0));
	EXPECT_EQ(EINVAL, errno);
	address(self, self->umad, 1, VENDOR_CLASS, METHOD_GET, 8);
	EXPECT_EQ(0, umad_send(self->fd[0], client, self->umad, MAD_SIZE, 300, 0));
	/* Nobody answers: TID 8 times out, and is free again. */
	len = MAD_SIZE;
	ASSERT_EQ(client, umad_recv(self->fd[0], self->umad, &len, 5000));
	EXPECT_EQ(ETIMEDOUT, umad_status(self->umad));
	EXPECT_EQ(8u, (uint32_t)be64toh(((struct mad_hdr *)umad_get_mad(self->umad))->tid));
	address(self, self->umad, 1, VENDOR_CLASS, METHOD_GET, 8);
	EXPECT_EQ(0, umad_send(self->fd[0], client, self->umad, MAD_SIZE, 300, 0));
	/* A MAD of a class without RMPP is at most 256 bytes. */
	errno = 0;
	EXPECT_EQ(-EIO, umad_send(self->fd[0], client, self->umad, MAD_SIZE + 1, 0, 0));
	EXPECT_EQ(EINVAL, errno);
}

TEST_F(gsi, umad_poll_waits_for_an_arrival_and_times_out_without_one)
{
	long get_only[16 / sizeof(long)] = { 1L << METHOD_GET };
	struct timespec start;
	int client, server;

	server = umad_register(self->fd[1], VENDOR_CLASS, 1, 0, get_only);
	client = umad_register(self->fd[0], VENDOR_CLASS, 1, 0, NULL);
	ASSERT_LE(0, server);
	ASSERT_LE(0, client);
	EXPECT_EQ(-ETIMEDOUT, umad_poll(self->fd[1], 0));
	/* A lower bound: poll's timeout is an hrtimer on CLOCK_MONOTONIC, never early. */
	clock_gettime(CLOCK_MONOTONIC, &start);
	EXPECT_EQ(-ETIMEDOUT, umad_poll(self->fd[1], 200));
	EXPECT_LE(190, elapsed_ms(&start));
	address(self, self->umad, 1, VENDOR_CLASS, METHOD_GET, 0x9011);
	ASSERT_EQ(0, umad_send(self->fd[0], client, self->umad, MAD_SIZE, 0, 0));
	EXPECT_EQ(0, umad_poll(self->fd[1], 5000));
	EXPECT_EQ(0x9011u, (uint32_t)serve(self, server));
	EXPECT_EQ(-ETIMEDOUT, umad_poll(self->fd[1], 0));
}

/*
 * A umad_recv with no timeout, blocked in another thread: in poll(), which
 * libibumad waits in before it reads.
 */
struct blocked_recv {
	int fd, agent, len;
	atomic_int tid;
	void *umad;
};

static void *recv_blocking(void *arg)
{
	struct blocked_recv *b = arg;

	b->tid = gettid();
	b->agent = umad_recv(b->fd, b->umad, &b->len, -1);
	return NULL;
}

TEST_F(gsi, a_blocked_umad_recv_returns_the_arrival)
{
	long get_only[16 / sizeof(long)] = { 1L << METHOD_GET };
	struct blocked_recv b = { .len = MAD_SIZE };
	int client, server;
	pthread_t thread;

	server = umad_register(self->fd[1], VENDOR_CLASS, 1, 0, get_only);
	client = umad_register(self->fd[0], VENDOR_CLASS, 1, 0, NULL);
	ASSERT_LE(0, server);
	ASSERT_LE(0, client);
	b.fd = self->fd[1];
	b.umad = calloc(1, umad_size() + MAD_SIZE);
	ASSERT_NE(NULL, b.umad);
	ASSERT_EQ(0, pthread_create(&thread, NULL, recv_blocking, &b));
	/* A recv that began after the arrival would find the MAD there. */
	ASSERT_TRUE(wait_blocked_in(&b.tid, NR_POLL)) TH_LOG("umad_recv never blocked");
	address(self, self->umad, 1, VENDOR_CLASS, METHOD_GET, 0xb10c);
	ASSERT_EQ(0, umad_send(self->fd[0], client, self->umad, MAD_SIZE, 0, 0));
	ASSERT_EQ(0, pthread_join(thread, NULL));
	EXPECT_EQ(server, b.agent);
	EXPECT_EQ(MAD_SIZE, b.len);
	EXPECT_EQ(0xb10cu, (uint32_t)be64toh(((struct mad_hdr *)umad_get_mad(b.umad))->tid));
	free(b.umad);
}

/* The byte at offset i of an RMPP message's data. */
static uint8_t rmpp_byte(size_t i)
{
	return i * 13 + i / RMPP_DATA;
}

TEST_F(gsi, a_kernel_rmpp_response_through_umad_register_oui)
{
	long get_only[16 / sizeof(long)] = { 1L << METHOD_GET };
	size_t data = 10 * RMPP_DATA - 30, whole = 40 + data;
	int client, server, len, agent;
	struct mad_hdr *mad;
	uint8_t *response;
	uint64_t tid;
	void *big;

	server = umad_register_oui(self->fd[1], VENDOR2_CLASS, 1, test_oui, get_only);
	client = umad_register_oui(self->fd[0], VENDOR2_CLASS, 1, test_oui, NULL);
	ASSERT_LE(0, server) TH_LOG("server register: %s", strerror(-server));
	ASSERT_LE(0, client) TH_LOG("client register: %s", strerror(-client));
	address(self, self->umad, 1, VENDOR2_CLASS, METHOD_GET, 0x4e55);
	ASSERT_EQ(0, umad_send(self->fd[0], client, self->umad, MAD_SIZE, ANSWERED_MS, 0));
	tid = serve(self, server);
	ASSERT_NE((uint64_t)0, tid);

	/* Ten segments' worth, which the kernel cuts up and puts together. */
	big = calloc(1, umad_size() + whole);
	ASSERT_NE(NULL, big);
	address(self, big, 0, VENDOR2_CLASS, METHOD_GET_RESP, tid);
	response = umad_get_mad(big);
	response[24] = 1; /* RMPP version */
	response[25] = 1; /* DATA */
	response[26] = 1; /* ACTIVE */
	for (size_t i = 0; i < data; i++)
		response[40 + i] = rmpp_byte(i);
	ASSERT_EQ(0, umad_send(self->fd[1], server, big, whole, 0, 0));

	/* Read as opensm reads: too short first, which says how long. */
	len = MAD_SIZE;
	EXPECT_EQ(-ENOSPC, umad_recv(self->fd[0], self->umad, &len, 30000));
	EXPECT_EQ((int)whole, len);
	memset(big, 0, umad_size() + whole);
	agent = umad_recv(self->fd[0], big, &len, 30000);
	ASSERT_EQ(client, agent) TH_LOG("recv: %s", strerror(-agent));
	ASSERT_EQ((int)whole, len);
	mad = umad_get_mad(big);
	EXPECT_EQ(METHOD_GET_RESP, mad->method);
	EXPECT_EQ(tid, be64toh(mad->tid));
	for (size_t i = 0; i < data; i++)
		if (response[40 + i] != rmpp_byte(i)) {
			EXPECT_EQ(rmpp_byte(i), response[40 + i]) TH_LOG("byte %zu", i);
			break;
		}
	free(big);
}

TEST_F(gsi, user_rmpp_segments_through_umad_register2)
{
	struct umad_reg_attr attr = {
		.mgmt_class = VENDOR2_CLASS, .mgmt_class_version = 1,
		.flags = UMAD_USER_RMPP, .rmpp_version = 1,
		.oui = test_oui[0] << 16 | test_oui[1] << 8 | test_oui[2],
	};
	uint8_t *mad = umad_get_mad(self->umad);
	uint32_t client, server;
	int len;

	attr.method_mask[0] = 1ULL << METHOD_SET;
	ASSERT_EQ(0, umad_register2(self->fd[1], &attr, &server));
	attr.method_mask[0] = 0;
	ASSERT_EQ(0, umad_register2(self->fd[0], &attr, &client));
	/* Two segments of one transfer: one TID, not duplicates. */
	for (int seg = 1; seg <= 2; seg++) {
		address(self, self->umad, 1, VENDOR2_CLASS, METHOD_SET, 0x3001);
		mad[24] = 1;
		mad[25] = 1;
		mad[26] = 1 | (seg == 1 ? 2 : 4); /* ACTIVE, FIRST or LAST */
		mad[31] = seg;
		for (int i = 40; i < MAD_SIZE; i++)
			mad[i] = i ^ seg;
		ASSERT_EQ(0, umad_send(self->fd[0], client, self->umad, MAD_SIZE, 0, 0))
			TH_LOG("segment %d", seg);
	}
	for (int seg = 1; seg <= 2; seg++) {
		memset(self->umad, 0, umad_size() + MAD_SIZE);
		len = MAD_SIZE;
		ASSERT_EQ((int)server, umad_recv(self->fd[1], self->umad, &len, 5000));
		EXPECT_EQ(MAD_SIZE, len);
		EXPECT_EQ(1 | (seg == 1 ? 2 : 4), mad[26] & 7);
		EXPECT_EQ(seg, mad[31]);
		EXPECT_EQ(100 ^ seg, mad[100]);
	}
}

TEST_F(gsi, the_address_of_an_arrival_is_the_senders)
{
	long get_only[16 / sizeof(long)] = { 1L << METHOD_GET };
	ib_mad_addr_t *from;
	int client, server;

	server = umad_register(self->fd[1], VENDOR_CLASS, 1, 0, get_only);
	client = umad_register(self->fd[0], VENDOR_CLASS, 1, 0, NULL);
	ASSERT_LE(0, server);
	ASSERT_LE(0, client);
	address(self, self->umad, 1, VENDOR_CLASS, METHOD_GET, 0xadd);
	ASSERT_EQ(0, umad_set_pkey(self->umad, 0));
	ASSERT_EQ(0, umad_send(self->fd[0], client, self->umad, MAD_SIZE, 0, 0));
	memset(self->umad, 0xa5, umad_size());
	ASSERT_EQ(0xaddu, (uint32_t)serve(self, server));
	EXPECT_EQ(0, umad_status(self->umad));
	EXPECT_EQ(0, umad_get_pkey(self->umad));
	from = umad_get_mad_addr(self->umad);
	EXPECT_EQ(1u, be32toh(from->qpn));
	EXPECT_EQ(1, from->grh_present);
	EXPECT_EQ(0, memcmp(from->gid, self->port[0].gid, 16)) TH_LOG("the client's GID");
	EXPECT_EQ(0, from->gid_index);
	/* The sender's LID too where the pair routes by LID; soft-RoCE gives none. */
	if (umad_pair()->ib)
		EXPECT_EQ(self->port[0].lid, be16toh(from->lid)) TH_LOG("the client's LID");
}

TEST_HARNESS_MAIN
