// SPDX-License-Identifier: GPL-2.0
/*
 * What a umad test that uses libibumad is built from where there is no
 * libibumad (rdma-core's libibumad-dev) to build it with: it skips.
 */
#include "../kselftest.h"

int main(void)
{
	ksft_print_header();
	ksft_exit_skip("%s was built without libibumad\n", UMAD_PROG);
}
