/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the umad samples share: the class and method numbers they use, how
 * they fail, and the GID they send to (RoCE needs a GRH).
 */
#ifndef UMAD_SAMPLE_H
#define UMAD_SAMPLE_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define VENDOR_CLASS 0x09
#define METHOD_GET 0x01
#define METHOD_GET_RESP 0x81
#define QP1_QKEY 0x80010000
#define MAD_SIZE 256

/* The OUI that the samples' vendor classes of range 2 (0x30-0x4f) carry. */
static uint8_t sample_oui[3] = { 0x00, 0x14, 0x05 };

/* A method mask with GET alone, for the agents that serve GETs. */
static long get_only[16 / sizeof(long)] = { 1L << METHOD_GET };

/* Says what failed and why, as "<program>: <what>: <error>"; returns 1. */
static inline int sample_fail(const char *program, const char *what, int err)
{
	fprintf(stderr, "%s: %s: %s\n", program, what, strerror(err < 0 ? -err : err));
	return 1;
}

/* Reads the GID at index 0 of dev's port 1 from sysfs; -errno on error. */
static inline int port_gid(const char *dev, uint8_t gid[16])
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

#endif
