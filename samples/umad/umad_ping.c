// SPDX-License-Identifier: GPL-2.0
/*
 * umad_ping: a vendor-class GET from one port and its GET_RESP from another,
 * through libibumad, printing each step. Unchanged libibumad; it cannot tell
 * which umad driver is loaded.
 *
 *   umad_ping <from-device> <to-device>      (port 1 of each; RoCE needs GRH)
 */
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <infiniband/umad.h>

#define VENDOR_CLASS 0x09
#define METHOD_GET 0x01
#define METHOD_GET_RESP 0x81
#define QP1_QKEY 0x80010000
#define MAD_SIZE 256

static int fail(const char *what, int err)
{
	fprintf(stderr, "umad_ping: %s: %s\n", what, strerror(err < 0 ? -err : err));
	return 1;
}

/* Reads the GID at index 0 of dev's port 1 from sysfs. */
static int port_gid(const char *dev, uint8_t gid[16])
{
	unsigned int w[8];
	char path[128];
	FILE *f;
	int n;

	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/ports/1/gids/0", dev);
	f = fopen(path, "r");
	if (!f)
		return -errno;
	n = fscanf(f, "%x:%x:%x:%x:%x:%x:%x:%x", &w[0], &w[1], &w[2], &w[3],
		   &w[4], &w[5], &w[6], &w[7]);
	fclose(f);
	if (n != 8)
		return -EINVAL;
	for (int i = 0; i < 8; i++) {
		gid[2 * i] = w[i] >> 8;
		gid[2 * i + 1] = w[i];
	}
	return 0;
}

int main(int argc, char **argv)
{
	long get_only[16 / sizeof(long)] = { 1L << METHOD_GET };
	int from, to, client, server, len, ret;
	ib_mad_addr_t grh = { 0 }, *addr;
	uint8_t *umad, *mad;

	if (argc != 3) {
		fprintf(stderr, "usage: umad_ping <from-device> <to-device>\n");
		return 2;
	}
	umad = calloc(1, umad_size() + MAD_SIZE);
	if (!umad || umad_init())
		return fail("init", ENOMEM);

	from = umad_open_port(argv[1], 1);
	if (from < 0)
		return fail(argv[1], from);
	to = umad_open_port(argv[2], 1);
	if (to < 0)
		return fail(argv[2], to);
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
	ret = umad_send(from, client, umad, MAD_SIZE, 2000, 3);
	if (ret)
		return fail("send GET", ret);
	printf("%s: sent GET class 0x%02x tid 0x1234 to %s\n", argv[1], VENDOR_CLASS, argv[2]);

	len = MAD_SIZE;
	ret = umad_recv(to, umad, &len, 5000);
	if (ret != server)
		return fail("receive GET", ret);
	addr = umad_get_mad_addr(umad);
	printf("%s: got method 0x%02x tid 0x%llx, %d bytes, from QP%u%s\n", argv[2],
	       mad[3], (unsigned long long)be64toh(*(uint64_t *)(mad + 8)), len,
	       be32toh(addr->qpn), addr->grh_present ? " with GRH" : "");

	mad[3] = METHOD_GET_RESP;
	addr->qkey = htobe32(QP1_QKEY);
	ret = umad_send(to, server, umad, MAD_SIZE, 0, 0);
	if (ret)
		return fail("send GET_RESP", ret);

	len = MAD_SIZE;
	ret = umad_recv(from, umad, &len, 5000);
	if (ret != client)
		return fail("receive GET_RESP", ret);
	printf("%s: got method 0x%02x tid 0x%llx, status %d\n", argv[1], mad[3],
	       (unsigned long long)be64toh(*(uint64_t *)(mad + 8)), umad_status(umad));

	umad_close_port(from);
	umad_close_port(to);
	umad_done();
	free(umad);
	return mad[3] == METHOD_GET_RESP ? 0 : 1;
}
