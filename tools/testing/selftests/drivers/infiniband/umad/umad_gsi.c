// SPDX-License-Identifier: GPL-2.0
/*
 * A GSI request and its response between the two rxe ports, through
 * unchanged libibumad (linked statically): what every SA client, ibacm and
 * infiniband-diags do.
 */
#include <endian.h>
#include <infiniband/umad.h>

#include "kselftest_harness.h"
#include "umad_test.h"

#define VENDOR_CLASS 0x09 /* vendor range 1: no OUI, no RMPP */
#define METHOD_GET 0x01
#define METHOD_GET_RESP 0x81
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

FIXTURE(gsi)
{
	char ca[2][UMAD_CA_NAME_LEN];
	int fd[2];
	void *umad;
};

FIXTURE_SETUP(gsi)
{
	struct ib_port ports[MAX_NODES];
	int nports, nca = 0;

	nports = list_ib_ports(ports, MAX_NODES);
	for (int i = 0; i < nports && nca < 2; i++)
		if (!strcmp(ports[i].link_layer, "Ethernet") && ports[i].port == 1)
			snprintf(self->ca[nca++], UMAD_CA_NAME_LEN, "%s",
				 ports[i].ibdev);
	ASSERT_EQ(2, nca) TH_LOG("the rig makes two rxe devices");
	ASSERT_EQ(0, umad_init());
	for (int i = 0; i < 2; i++) {
		self->fd[i] = umad_open_port(self->ca[i], 1);
		ASSERT_LE(0, self->fd[i]) TH_LOG("umad_open_port(%s): %s",
						 self->ca[i],
						 strerror(-self->fd[i]));
	}
	self->umad = calloc(1, umad_size() + MAD_SIZE);
	ASSERT_NE(NULL, self->umad);
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

	/* GET from the first port to the second; RoCE needs a GRH. */
	mad->base_version = 1;
	mad->mgmt_class = VENDOR_CLASS;
	mad->class_version = 1;
	mad->method = METHOD_GET;
	mad->tid = htobe64(TEST_TID_LOW);
	mad->attr_id = htobe16(0x10);
	ASSERT_EQ(0, umad_set_addr(self->umad, 0, 1, 0, QP1_QKEY));
	ASSERT_EQ(0, read_gid(self->ca[1], 1, 0, grh.gid));
	grh.gid_index = 0;
	grh.hop_limit = 64;
	ASSERT_EQ(0, umad_set_grh(self->umad, &grh));
	ASSERT_EQ(0, umad_send(self->fd[0], client, self->umad, MAD_SIZE, 2000, 3));

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

TEST_HARNESS_MAIN
