// SPDX-License-Identifier: GPL-2.0
/*
 * The infiniband_mad class as userspace finds it: abi_version, one umadN per
 * MAD port with its ibdev/port attributes and char numbers, issmN only where
 * the port has an SMI (never on RoCE); ibdev follows a rename of the IB
 * device, and a read racing one shows one name or the other, whole (on the
 * race kernel, KCSAN watches the driver's side).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>

#include "../kselftest_harness.h"
#include "umad_test.h"
#include "umad_nl.h"

UMAD_NEEDS_PAIR

/* umadN and issmN numbers of devnum N, as the C driver lays them out. */
static void expected_devt(const struct mad_node *node, int issm,
			  unsigned int *major, unsigned int *minor)
{
	if (node->devnum < UMAD_FIXED_MINORS) {
		*major = UMAD_MAJOR;
		*minor = node->devnum + (issm ? UMAD_FIXED_MINORS : 0);
		return;
	}
	/* The dynamic region's major is whatever the kernel gave it. */
	*major = node->major;
	*minor = node->devnum - UMAD_FIXED_MINORS + (issm ? 8128 : 0);
}

TEST(abi_version_is_5)
{
	char buf[16];

	ASSERT_EQ(0, read_attr(SYS_MAD_CLASS "/abi_version", buf, sizeof(buf)));
	EXPECT_STREQ("5", buf);
}

TEST(one_umad_node_per_mad_port)
{
	struct mad_node nodes[MAX_NODES];
	struct ib_port ports[MAX_NODES];
	int nnodes, nports;

	nports = list_ib_ports(ports, MAX_NODES);
	ASSERT_GE(nports, 2) TH_LOG("the tests need the pair's two devices (umad_test.h)");
	nnodes = list_mad_nodes("umad", nodes, MAX_NODES);
	/* Every port in this VM is MAD-capable (RoCE or InfiniBand). */
	EXPECT_EQ(nports, nnodes);
	for (int i = 0; i < nports; i++) {
		EXPECT_NE(NULL, find_node(nodes, nnodes, ports[i].ibdev,
					  ports[i].port))
			TH_LOG("no umad node for %s port %d", ports[i].ibdev,
			       ports[i].port);
	}
}

TEST(umad_char_numbers_and_device_nodes)
{
	struct mad_node nodes[MAX_NODES];
	unsigned int major, minor;
	char path[128];
	struct stat st;
	int n;

	n = list_mad_nodes("umad", nodes, MAX_NODES);
	ASSERT_GE(n, 2);
	for (int i = 0; i < n; i++) {
		expected_devt(&nodes[i], 0, &major, &minor);
		EXPECT_EQ(major, nodes[i].major) TH_LOG("%s", nodes[i].name);
		EXPECT_EQ(minor, nodes[i].minor) TH_LOG("%s", nodes[i].name);

		ASSERT_EQ(0, node_dev_path(&nodes[i], path, sizeof(path)));
		ASSERT_EQ(0, stat(path, &st)) TH_LOG("%s: %s", path, strerror(errno));
		EXPECT_TRUE(S_ISCHR(st.st_mode));
		EXPECT_EQ(0600u, st.st_mode & 0777);
		EXPECT_EQ(makedev(nodes[i].major, nodes[i].minor), st.st_rdev);
	}
}

/*
 * Ports of both link layers where the pair is soft-RoCE's: its devices, and
 * ib_loopback's InfiniBand device of two ports, loaded for the test. Where
 * the pair is ib_loopback's, its four InfiniBand ports, and no RoCE port.
 */
FIXTURE(roce_and_ib) {
	bool loaded_here;
};

FIXTURE_SETUP(roce_and_ib)
{
	if (access(SYS_IB_CLASS "/iblo0", F_OK)) {
		if (!loopback_available())
			SKIP(return,
			     "no port with an SMI: soft-RoCE has none and ib_loopback is missing");
		ASSERT_EQ(0, LOOPBACK_LOAD("ndevs=1 nports=2"));
		self->loaded_here = true;
	}
}

/* In the parent: it runs even when a failed ASSERT ends the test. */
FIXTURE_TEARDOWN_PARENT(roce_and_ib)
{
	if (self->loaded_here)
		EXPECT_EQ(0, syscall(SYS_delete_module, "ib_loopback", 0));
}

TEST_F(roce_and_ib, issm_only_where_the_port_has_an_smi)
{
	struct mad_node umads[MAX_NODES], issms[MAX_NODES];
	struct ib_port ports[MAX_NODES];
	int nports, numad, nissm, roce = 0, ib = 0;

	nports = list_ib_ports(ports, MAX_NODES);
	numad = list_mad_nodes("umad", umads, MAX_NODES);
	nissm = list_mad_nodes("issm", issms, MAX_NODES);
	for (int i = 0; i < nports; i++) {
		const struct mad_node *umad, *issm;
		unsigned int major, minor;

		umad = find_node(umads, numad, ports[i].ibdev, ports[i].port);
		ASSERT_NE(NULL, umad) TH_LOG("%s port %d", ports[i].ibdev,
					     ports[i].port);
		issm = find_node(issms, nissm, ports[i].ibdev, ports[i].port);
		if (!strcmp(ports[i].link_layer, "Ethernet")) {
			roce++;
			EXPECT_EQ(NULL, issm) TH_LOG("RoCE port %s/%d has %s",
						     ports[i].ibdev,
						     ports[i].port, issm->name);
			continue;
		}
		/* InfiniBand: issmN shares umadN's number. */
		ib++;
		ASSERT_NE(NULL, issm) TH_LOG("InfiniBand port %s/%d has no issm node",
					     ports[i].ibdev, ports[i].port);
		EXPECT_EQ(umad->devnum, issm->devnum);
		expected_devt(umad, 1, &major, &minor);
		EXPECT_EQ(major, issm->major);
		EXPECT_EQ(minor, issm->minor);
	}
	if (umad_pair()->ib)
		TH_LOG("RoCE ports not counted: the pair is ib_loopback's, no soft-RoCE (%d here)",
		       roce);
	else
		EXPECT_GE(roce, 2) TH_LOG("the tests need two rxe devices (umad_test.h)");
	EXPECT_GE(ib, umad_pair()->ib ? 4 : 2)
		TH_LOG("ib_loopback makes two InfiniBand ports, the pair's four");
}

/*
 * Two names as long as a name may be (IB_DEVICE_NAME_MAX - 1) that differ
 * in every byte past their common start, so that a read that mixes them
 * shows it.
 */
#define NAME_A "umad_rename_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define NAME_B "umad_rename_bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
#define RENAMES 1000
#define READERS 2

/* The pair's server is renamed. */
FIXTURE(rename) {
	char ibdev_attr[128];
	int nl;
	int index; /* the server's, whatever its name */
};

FIXTURE_SETUP(rename)
{
	char path[128];

	ASSERT_EQ(0, umad_path(umad_pair()->server, 1, path, sizeof(path)));
	ASSERT_GT((int)sizeof(self->ibdev_attr),
		  snprintf(self->ibdev_attr, sizeof(self->ibdev_attr),
			   SYS_MAD_CLASS "/%s/ibdev", strrchr(path, '/') + 1));
	self->nl = nl_open();
	ASSERT_LE(0, self->nl);
	self->index = dev_index(self->nl, umad_pair()->server);
	ASSERT_LE(0, self->index);
}

/*
 * In the parent, with a socket of its own (the test's is the child's): it
 * runs even when a failed ASSERT ends the test.
 */
FIXTURE_TEARDOWN_PARENT(rename)
{
	int nl = nl_open();

	ASSERT_LE(0, nl);
	EXPECT_EQ(0, nl_rename(nl, self->index, umad_pair()->server));
	close(nl);
}

struct ibdev_reader {
	const char *attr;
	atomic_bool stop;
	long reads, torn;
	char last_torn[128];
};

/*
 * Reads ibdev until told to stop, again and again from one open file (each
 * read from offset 0 runs the show anew); anything but a whole name is
 * torn.
 */
static void *read_ibdev(void *arg)
{
	struct ibdev_reader *r = arg;
	char name[128];
	ssize_t n;
	int fd;

	fd = open(r->attr, O_RDONLY);
	if (fd < 0)
		return NULL;
	while (!r->stop) {
		n = pread(fd, name, sizeof(name) - 1, 0);
		if (n <= 0)
			continue;
		name[n] = 0;
		name[strcspn(name, "\n")] = 0;
		r->reads++;
		if (strcmp(name, umad_pair()->server) && strcmp(name, NAME_A) &&
		    strcmp(name, NAME_B)) {
			r->torn++;
			snprintf(r->last_torn, sizeof(r->last_torn), "%s", name);
		}
	}
	close(fd);
	return NULL;
}

/*
 * ibdev shows the name the device has after each rename, and reads that
 * race renames (READERS threads against RENAMES renames) show whole names.
 */
TEST_F_TIMEOUT(rename, ibdev_follows_renames_and_a_racing_read_is_whole, 300)
{
	struct ibdev_reader readers[READERS];
	pthread_t threads[READERS];
	const char *name;
	char shown[128];

	for (int i = 0; i < READERS; i++) {
		readers[i] = (struct ibdev_reader){ .attr = self->ibdev_attr };
		ASSERT_EQ(0, pthread_create(&threads[i], NULL, read_ibdev, &readers[i]));
	}
	/* The renames begin once every reader reads: on any guest, they race. */
	for (int i = 0; i < READERS; i++) {
		long *reads = &readers[i].reads;

		for (int t = 0; t < 10000 && !__atomic_load_n(reads, __ATOMIC_RELAXED); t++)
			usleep(1000);
	}
	for (int i = 0; i < RENAMES; i++) {
		name = i % 2 ? NAME_B : NAME_A;
		ASSERT_EQ(0, nl_rename(self->nl, self->index, name));
		ASSERT_EQ(0, read_attr(self->ibdev_attr, shown, sizeof(shown)));
		EXPECT_STREQ(name, shown);
	}
	ASSERT_EQ(0, nl_rename(self->nl, self->index, umad_pair()->server));
	ASSERT_EQ(0, read_attr(self->ibdev_attr, shown, sizeof(shown)));
	EXPECT_STREQ(umad_pair()->server, shown);
	for (int i = 0; i < READERS; i++) {
		readers[i].stop = true;
		pthread_join(threads[i], NULL);
		TH_LOG("reader %d: %ld of %ld reads torn", i, readers[i].torn, readers[i].reads);
		EXPECT_LT(0, readers[i].reads);
		EXPECT_EQ(0, readers[i].torn) TH_LOG("last torn: \"%s\"", readers[i].last_torn);
	}
}

TEST_HARNESS_MAIN
