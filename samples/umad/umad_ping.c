// SPDX-License-Identifier: GPL-2.0
/*
 * umad_ping: a vendor-class GET from one port and its GET_RESP from another,
 * then a GET answered by a 10-segment RMPP response that the kernel MAD
 * layer segments and reassembles, read as opensm does (a first read too
 * small, ENOSPC with the length, a second read), all through libibumad,
 * printing each step. Unchanged libibumad; it cannot tell which umad
 * driver is loaded.
 *
 *   umad_ping <from-device> <to-device>      (port 1 of each; RoCE needs GRH)
 */
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <infiniband/umad.h>

#include "umad_sample.h"

#define RMPP_CLASS 0x30 /* vendor range 2: OUI and RMPP */
#define RMPP_SEGMENTS 10
#define RMPP_DATA 216 /* a segment's data: 256 - the vendor header (40) */

static int fail(const char *what, int err)
{
	return sample_fail("umad_ping", what, err);
}

/*
 * Sends one MAD of MAD_SIZE bytes in umad from (from, agent) and receives
 * the next MAD on to, which must be for to_agent, into umad; returns its
 * length, or -1 after saying what failed.
 */
static int send_and_receive(int from, int agent, int to, int to_agent, void *umad,
			    int timeout_ms, int retries, const char *what)
{
	int len = MAD_SIZE, ret;

	ret = umad_send(from, agent, umad, MAD_SIZE, timeout_ms, retries);
	if (ret)
		return -fail(what, ret);
	ret = umad_recv(to, umad, &len, 5000);
	if (ret != to_agent)
		return -fail(what, ret < 0 ? ret : EPROTO);
	return len;
}

/* The RMPP stage: a GET on RMPP_CLASS, answered with RMPP_SEGMENTS segments. */
static int rmpp_exchange(char **argv, int from, int to, ib_mad_addr_t grh)
{
	int client, server, len, size, ret;
	const int data = RMPP_SEGMENTS * RMPP_DATA;
	uint8_t *umad, *mad;

	size = 40 + data;
	umad = calloc(1, umad_size() + size);
	if (!umad)
		return fail("rmpp", ENOMEM);
	server = umad_register_oui(to, RMPP_CLASS, 1, sample_oui, get_only);
	if (server < 0)
		return fail("register RMPP server", server);
	client = umad_register_oui(from, RMPP_CLASS, 1, sample_oui, NULL);
	if (client < 0)
		return fail("register RMPP client", client);
	mad = umad_get_mad(umad);
	mad[0] = 1;
	mad[1] = RMPP_CLASS;
	mad[2] = 1;
	mad[3] = METHOD_GET;
	*(uint64_t *)(mad + 8) = htobe64(0x5678);
	memcpy(mad + 37, sample_oui, sizeof(sample_oui));
	umad_set_addr(umad, 0, 1, 0, QP1_QKEY);
	umad_set_grh(umad, &grh);
	if (send_and_receive(from, client, to, server, umad, 5000, 0, "RMPP GET") < 0)
		return 1;

	/* The response: RMPP active, the kernel cuts it into segments. */
	mad[3] = METHOD_GET_RESP;
	mad[24] = 1; /* RMPP version */
	mad[25] = 1; /* DATA */
	mad[26] = 1; /* ACTIVE */
	for (int i = 0; i < data; i++)
		mad[40 + i] = i % 251;
	umad_get_mad_addr(umad)->qkey = htobe32(QP1_QKEY);
	ret = umad_send(to, server, umad, size, 0, 0);
	if (ret)
		return fail("send RMPP GET_RESP", ret);
	printf("%s: sent a %d-byte RMPP response (%d segments)\n", argv[2], data, RMPP_SEGMENTS);

	memset(umad, 0, umad_size() + size);
	len = MAD_SIZE;
	ret = umad_recv(from, umad, &len, 5000);
	if (ret != -ENOSPC)
		return fail("first read of the RMPP response", ret < 0 ? ret : EPROTO);
	printf("%s: a %d-byte read is too small: ENOSPC, the message has %d bytes\n",
	       argv[1], MAD_SIZE, len);
	if (len != size)
		return fail("RMPP response length", EPROTO);
	ret = umad_recv(from, umad, &len, 5000);
	if (ret != client)
		return fail("second read of the RMPP response", ret);
	for (int i = 0; i < data; i++)
		if (mad[40 + i] != i % 251)
			return fail("RMPP response data", EPROTO);
	printf("%s: got the RMPP response whole: %d bytes, tid 0x%llx\n", argv[1], len,
	       (unsigned long long)be64toh(*(uint64_t *)(mad + 8)));
	free(umad);
	return 0;
}

int main(int argc, char **argv)
{
	int from, to, client, server, len, ret;
	ib_mad_addr_t grh = { 0 }, *addr;
	uint8_t *umad, *mad;

	if (argc != 3) {
		fprintf(stderr, "usage: umad_ping <from-device> <to-device>\n");
		return 2;
	}
	if (umad_init())
		return fail("init", ENOMEM);

	from = umad_open_port(argv[1], 1);
	if (from < 0)
		return fail(argv[1], from);
	to = umad_open_port(argv[2], 1);
	if (to < 0)
		return fail(argv[2], to);
	/* umad_size() is the header's size once a port is open: before, it
	 * is the old ABI's, 8 bytes short. */
	umad = calloc(1, umad_size() + MAD_SIZE);
	if (!umad)
		return fail("init", ENOMEM);
	server = umad_register(to, VENDOR_CLASS, 1, 0, get_only);
	if (server < 0)
		return fail("register server", server);
	client = umad_register(from, VENDOR_CLASS, 1, 0, NULL);
	if (client < 0)
		return fail("register client", client);
	/* Where the MAD starts depends on the header the open chose. */
	mad = umad_get_mad(umad);

	mad[0] = 1; /* base version */
	mad[1] = VENDOR_CLASS;
	mad[2] = 1; /* class version */
	mad[3] = METHOD_GET;
	*(uint64_t *)(mad + 8) = htobe64(0x1234);
	umad_set_addr(umad, 0, 1, 0, QP1_QKEY);
	ret = port_gid(argv[2], grh.gid);
	if (ret)
		return fail("gid", ret);
	grh.hop_limit = 64;
	umad_set_grh(umad, &grh);
	printf("%s: sending GET class 0x%02x tid 0x1234 to %s\n", argv[1], VENDOR_CLASS, argv[2]);
	len = send_and_receive(from, client, to, server, umad, 2000, 3, "GET");
	if (len < 0)
		return 1;
	addr = umad_get_mad_addr(umad);
	printf("%s: got method 0x%02x tid 0x%llx, %d bytes, from QP%u%s\n", argv[2],
	       mad[3], (unsigned long long)be64toh(*(uint64_t *)(mad + 8)), len,
	       be32toh(addr->qpn), addr->grh_present ? " with GRH" : "");

	mad[3] = METHOD_GET_RESP;
	addr->qkey = htobe32(QP1_QKEY);
	if (send_and_receive(to, server, from, client, umad, 0, 0, "GET_RESP") < 0)
		return 1;
	printf("%s: got method 0x%02x tid 0x%llx, status %d\n", argv[1], mad[3],
	       (unsigned long long)be64toh(*(uint64_t *)(mad + 8)), umad_status(umad));

	if (mad[3] != METHOD_GET_RESP)
		return 1;
	ret = rmpp_exchange(argv, from, to, grh);
	umad_close_port(from);
	umad_close_port(to);
	umad_done();
	free(umad);
	return ret;
}
