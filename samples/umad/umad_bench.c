// SPDX-License-Identifier: GPL-2.0
/*
 * umad_bench: how fast MADs move through the loaded umad driver, through
 * libibumad, between port 1 of two devices. It measures, and prints one
 * "<name> <value> <unit>" line per figure; it judges nothing (the rig runs
 * it against both drivers in one boot and reports the ratios).
 *
 *   umad_bench <client-device> <server-device>
 *
 *   round_trip  a GET and its GET_RESP, one at a time (us each)
 *   flood       unsolicited GETs written back to back and read by the
 *               server (MADs per second, first write to last read)
 *   flood_write the writing part of it alone (MADs per second)
 *   write_eio   a write for an agent id nobody has: the syscall and the
 *               driver's checks up to the agent lookup (us each)
 *   write_noah  a write whose address handle the port refuses (RoCE without
 *               a GRH): up to and including the AH attempt (us each)
 */
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <infiniband/umad.h>

#include "umad_sample.h"

#define ROUND_TRIPS 2000
#define FLOOD 20000

static int fail(const char *what, int err)
{
	return sample_fail("umad_bench", what, err);
}

static double seconds(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

/* Fills umad with a MAD of method to grh's GID, with transaction id tid. */
static void address(void *umad, ib_mad_addr_t *grh, int method, uint64_t tid)
{
	uint8_t *mad = umad_get_mad(umad);

	memset(mad, 0, MAD_SIZE);
	mad[0] = 1;
	mad[1] = VENDOR_CLASS;
	mad[2] = 1;
	mad[3] = method;
	*(uint64_t *)(mad + 8) = htobe64(tid);
	umad_set_addr(umad, 0, 1, 0, QP1_QKEY);
	umad_set_grh(umad, grh);
}

int main(int argc, char **argv)
{
	long get_only[16 / sizeof(long)] = { 1L << METHOD_GET };
	ib_mad_addr_t to_server = { .hop_limit = 64 }, to_client = { .hop_limit = 64 };
	int client_fd, server_fd, client, server, len, ret;
	double start;
	void *umad;

	if (argc != 3) {
		fprintf(stderr, "usage: umad_bench <client-device> <server-device>\n");
		return 2;
	}
	umad = calloc(1, umad_size() + MAD_SIZE);
	if (!umad || umad_init())
		return fail("init", ENOMEM);
	client_fd = umad_open_port(argv[1], 1);
	server_fd = umad_open_port(argv[2], 1);
	if (client_fd < 0 || server_fd < 0)
		return fail("open", client_fd < 0 ? client_fd : server_fd);
	server = umad_register(server_fd, VENDOR_CLASS, 1, 0, get_only);
	client = umad_register(client_fd, VENDOR_CLASS, 1, 0, NULL);
	if (server < 0 || client < 0)
		return fail("register", server < 0 ? server : client);
	ret = port_gid(argv[2], to_server.gid) ?: port_gid(argv[1], to_client.gid);
	if (ret)
		return fail("gid", ret);

	start = seconds();
	for (int i = 0; i < ROUND_TRIPS; i++) {
		uint64_t tid;

		address(umad, &to_server, METHOD_GET, i);
		ret = umad_send(client_fd, client, umad, MAD_SIZE, 1000, 3);
		len = MAD_SIZE;
		if (ret || umad_recv(server_fd, umad, &len, 5000) != server)
			return fail("round trip: GET", ret ?: ETIMEDOUT);
		tid = be64toh(*(uint64_t *)((uint8_t *)umad_get_mad(umad) + 8));
		address(umad, &to_client, METHOD_GET_RESP, tid);
		ret = umad_send(server_fd, server, umad, MAD_SIZE, 0, 0);
		len = MAD_SIZE;
		if (ret || umad_recv(client_fd, umad, &len, 5000) != client)
			return fail("round trip: GET_RESP", ret ?: ETIMEDOUT);
	}
	printf("round_trip %.1f us\n", (seconds() - start) * 1e6 / ROUND_TRIPS);

	start = seconds();
	for (int i = 0; i < FLOOD; i++) {
		address(umad, &to_server, METHOD_GET, ROUND_TRIPS + i);
		ret = umad_send(client_fd, client, umad, MAD_SIZE, 0, 0);
		if (ret)
			return fail("flood: send", ret);
	}
	printf("flood_write %.0f MADs/s\n", FLOOD / (seconds() - start));
	for (int i = 0; i < FLOOD; i++) {
		len = MAD_SIZE;
		if (umad_recv(server_fd, umad, &len, 5000) != server) {
			printf("flood_lost %d MADs\n", FLOOD - i);
			break;
		}
	}
	printf("flood %.0f MADs/s\n", FLOOD / (seconds() - start));

	start = seconds();
	for (int i = 0; i < FLOOD; i++) {
		address(umad, &to_server, METHOD_GET, i);
		if (umad_send(client_fd, 31, umad, MAD_SIZE, 0, 0) != -EIO)
			return fail("write_eio", EPROTO);
	}
	printf("write_eio %.2f us\n", (seconds() - start) * 1e6 / FLOOD);

	start = seconds();
	for (int i = 0; i < FLOOD; i++) {
		address(umad, &to_server, METHOD_GET, i);
		umad_set_grh(umad, NULL);
		if (umad_send(client_fd, client, umad, MAD_SIZE, 0, 0) == 0)
			return fail("write_noah", EPROTO);
	}
	printf("write_noah %.2f us\n", (seconds() - start) * 1e6 / FLOOD);

	umad_close_port(client_fd);
	umad_close_port(server_fd);
	umad_done();
	free(umad);
	return 0;
}
