// SPDX-License-Identifier: GPL-2.0
/*
 * Opening and closing umadN: a stream (no seeking), the module pinned while
 * a file is open, and what a file or a node sees when its device goes away.
 */
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>

#include "../kselftest_harness.h"
#include "umad_test.h"

UMAD_NEEDS_PAIR

TEST(every_umad_node_opens_and_closes)
{
	struct mad_node nodes[MAX_NODES];
	char path[128];
	int n, fd;

	n = list_mad_nodes("umad", nodes, MAX_NODES);
	ASSERT_GE(n, 2);
	for (int i = 0; i < n; i++) {
		ASSERT_EQ(0, node_dev_path(&nodes[i], path, sizeof(path)));
		fd = open(path, O_RDWR);
		ASSERT_LE(0, fd) TH_LOG("%s: %s", path, strerror(errno));
		EXPECT_EQ(0, close(fd));
	}
}

TEST(umad_file_is_a_stream)
{
	char path[128], buf[64];
	int fd;

	ASSERT_EQ(0, umad_path(umad_pair()->server, 1, path, sizeof(path)));
	fd = open(path, O_RDWR);
	ASSERT_LE(0, fd);
	EXPECT_EQ(-1, lseek(fd, 0, SEEK_SET));
	EXPECT_EQ(ESPIPE, errno);
	EXPECT_EQ(-1, pread(fd, buf, sizeof(buf), 0));
	EXPECT_EQ(ESPIPE, errno);
	EXPECT_EQ(-1, pwrite(fd, buf, sizeof(buf), 0));
	EXPECT_EQ(ESPIPE, errno);
	close(fd);
}

TEST(open_file_pins_the_module)
{
	const char *module = umad_module();
	char path[128];
	int fd;

	/* !!: the harness would print a pointer as an integer, which -m32 warns of. */
	ASSERT_TRUE(!!module);
	ASSERT_EQ(0, umad_path(umad_pair()->server, 1, path, sizeof(path)));
	fd = open(path, O_RDWR);
	ASSERT_LE(0, fd);
	EXPECT_EQ(-1, syscall(SYS_delete_module, module, O_NONBLOCK));
	EXPECT_EQ(EWOULDBLOCK, errno);
	close(fd);
	EXPECT_TRUE(!!umad_module()) TH_LOG("%s was unloaded", module);
}

TEST(close_after_the_device_is_gone)
{
	char path[128];
	int fd;

	ASSERT_EQ(0, umad_path(umad_pair()->server, 1, path, sizeof(path)));
	fd = open(path, O_RDWR);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, umad_server_remove());
	EXPECT_NE(0, access(path, F_OK)) TH_LOG("%s outlived its device", path);
	EXPECT_EQ(0, close(fd));
	ASSERT_EQ(0, umad_server_add());
}

TEST(stale_device_node_gives_enxio)
{
	char dir[] = "/tmp/umad_open.XXXXXX", stale[sizeof(dir) + 8];
	struct mad_node nodes[MAX_NODES];
	const struct mad_node *node;
	int n, fd;

	n = list_mad_nodes("umad", nodes, MAX_NODES);
	node = find_node(nodes, n, umad_pair()->server, 1);
	ASSERT_TRUE(!!node);
	ASSERT_TRUE(!!mkdtemp(dir));
	snprintf(stale, sizeof(stale), "%s/stale", dir);
	ASSERT_EQ(0, mknod(stale, S_IFCHR | 0600, makedev(node->major, node->minor)));
	ASSERT_EQ(0, umad_server_remove());
	fd = open(stale, O_RDWR);
	EXPECT_EQ(-1, fd);
	EXPECT_EQ(ENXIO, errno);
	if (fd >= 0)
		close(fd);
	unlink(stale);
	rmdir(dir);
	ASSERT_EQ(0, umad_server_add());
}

TEST_HARNESS_MAIN
