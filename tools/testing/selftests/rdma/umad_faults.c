// SPDX-License-Identifier: GPL-2.0
/*
 * Allocation failures on every path of the driver that allocates.
 *
 * The paths a task runs through the driver (open, register, write with its
 * address handle, send buffer and packet; and module load with the device
 * add it does for every device present): each allocation such a call makes
 * fails in turn (/proc/self/task/<tid>/fail-nth, with failslab failing
 * sleeping allocations too). The call fails cleanly, with ENOMEM or the
 * errno C gives, and works again at once.
 *
 * Receive runs in the MAD layer's completion work, not in a task of ours:
 * failslab's stack filter fails the one allocation made under the driver's
 * receive handler. The MAD is dropped and the next one arrives.
 *
 * A timeout report reuses the sent packet in both drivers, so it has no
 * allocation to fail. A kmemleak scan after the run shows nothing
 * leaked. Needs a kernel with CONFIG_FAILSLAB, fault injection's debugfs and
 * its stack filter (see config); skipped elsewhere.
 */
#include <arpa/inet.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <rdma/ib_user_mad.h>

#include "../kselftest_harness.h"
#include "umad_test.h"
#include "umad_ud.h"

UMAD_NEEDS_PAIR

#define FAILSLAB "/sys/kernel/debug/failslab/"
#define KUNIT_FILTER_GLOB "/sys/module/kunit/parameters/filter_glob"
#define HDR 64
#define MAD 256
#define VENDOR1_CLASS 0x0a
#define GET 0x01
/* More allocations than any of these calls makes. */
#define MAX_NTH 200
/* Loading a module allocates more: the loader's own, then the driver's. */
#define MAX_NTH_LOAD 5000

static char fail_nth_path[64];

/* Points fail_nth_path at the calling thread's; false if there is none. */
static bool fail_nth_available(void)
{
	snprintf(fail_nth_path, sizeof(fail_nth_path), "/proc/self/task/%ld/fail-nth",
		 (long)syscall(SYS_gettid));
	return !access(fail_nth_path, W_OK) && !access(FAILSLAB "ignore-gfp-wait", W_OK);
}

/* Makes the task's nth fault-injection point fail (0: none). */
static int fail_nth(int n)
{
	char buf[16];

	snprintf(buf, sizeof(buf), "%d", n);
	return write_attr(fail_nth_path, buf);
}

/* Whether the armed failure was used up (fail-nth reads 0 then). */
static bool failure_injected(void)
{
	char buf[16] = "";
	int fd = open(fail_nth_path, O_RDONLY);

	if (fd < 0)
		return false;
	read(fd, buf, sizeof(buf) - 1);
	close(fd);
	return atoi(buf) == 0;
}

/*
 * Whether a /proc/kallsyms line is a function of module (NULL: the kernel
 * proper), and its address and name.
 */
static bool function_of(const char *line, const char *module, unsigned long *addr,
			char *sym)
{
	char mod[64] = "", type;
	int n = sscanf(line, "%lx %c %383s [%63[^]]]", addr, &type, sym, mod);

	if (n < 3 || (type != 't' && type != 'T'))
		return false;
	return module ? n == 4 && !strcmp(mod, module) : n == 3;
}

/*
 * The address range of the function of module (NULL: the kernel proper)
 * whose name contains name, from /proc/kallsyms: its address up to the next
 * function's.
 */
static int function_range(const char *module, const char *name, unsigned long *start,
			  unsigned long *end)
{
	char line[512], sym[384];
	unsigned long addr;
	FILE *f;

	*start = 0;
	*end = ~0UL;
	f = fopen("/proc/kallsyms", "r");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f))
		/* (__pfx_ symbols are the padding before functions) */
		if (function_of(line, module, &addr, sym) && strstr(sym, name) &&
		    strncmp(sym, "__pfx_", 6))
			*start = addr;
	if (*start) {
		rewind(f);
		while (fgets(line, sizeof(line), f))
			if (function_of(line, module, &addr, sym) && addr > *start &&
			    addr < *end)
				*end = addr;
	}
	fclose(f);
	return *start && *end != ~0UL ? 0 : -ENOENT;
}

static long read_long(const char *path)
{
	char buf[32];

	return read_attr(path, buf, sizeof(buf)) ? -1 : strtol(buf, NULL, 0);
}

/* Sets failslab's require or reject range of callers to [start, end). */
static int fail_range(const char *which, unsigned long start, unsigned long end)
{
	char path[64], buf[32];

	snprintf(path, sizeof(path), FAILSLAB "%s-start", which);
	snprintf(buf, sizeof(buf), "%#lx", start);
	if (write_attr(path, buf))
		return -1;
	snprintf(path, sizeof(path), FAILSLAB "%s-end", which);
	snprintf(buf, sizeof(buf), "%#lx", end);
	return write_attr(path, buf);
}

/* Fails the next allocation made below [start, end) in any task. */
static int fail_below(unsigned long start, unsigned long end)
{
	return fail_range("require", start, end) ||
	       write_attr(FAILSLAB "stacktrace-depth", "32") ||
	       write_attr(FAILSLAB "task-filter", "N") ||
	       write_attr(FAILSLAB "interval", "1") ||
	       write_attr(FAILSLAB "space", "0") ||
	       write_attr(FAILSLAB "times", "1") ||
	       write_attr(FAILSLAB "probability", "100");
}

/* failslab's defaults: nothing fails but what fail-nth asks for. */
static void fail_nothing(void)
{
	write_attr(FAILSLAB "probability", "0");
	write_attr(FAILSLAB "require-start", "0");
	write_attr(FAILSLAB "require-end", "0xffffffffffffffff");
	write_attr(FAILSLAB "reject-start", "0");
	write_attr(FAILSLAB "reject-end", "0");
}

FIXTURE(faults) {
	int fd, agent;
	struct umad_port_addr peer; /* the server's port */
};

FIXTURE_SETUP(faults)
{
	char path[128];

	if (!fail_nth_available())
		SKIP(return, "no fail-nth or failslab on this kernel");
	ASSERT_EQ(0, write_attr(FAILSLAB "ignore-gfp-wait", "N"));
	ASSERT_EQ(0, write_attr(FAILSLAB "verbose", "0"));
	ASSERT_EQ(0, umad_path(umad_pair()->client, 1, path, sizeof(path)));
	self->fd = open(path, O_RDWR | O_NONBLOCK);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, read_port_addr(umad_pair()->server, 1, &self->peer));
	self->agent = -1;
}

FIXTURE_TEARDOWN(faults)
{
	fail_nth(0);
	fail_nothing();
	write_attr(FAILSLAB "ignore-gfp-wait", "Y");
	if (self->fd >= 0)
		close(self->fd);
}

/* Registers for VENDOR1_CLASS, receiving requests of method (-1: none). */
static int reg_method(int fd, int method)
{
	struct ib_user_mad_reg_req2 req = {
		.qpn = 1, .mgmt_class = VENDOR1_CLASS, .mgmt_class_version = 1,
	};

	if (method >= 0)
		req.method_mask[method / 64] |= 1ULL << (method % 64);
	if (ioctl(fd, IB_USER_MAD_REGISTER_AGENT2, &req))
		return -errno;
	return req.id;
}

static int reg(int fd)
{
	return reg_method(fd, -1);
}

static int send_get(int fd, int agent, const struct umad_port_addr *to, __u64 tid)
{
	__u8 buf[HDR + MAD] = { 0 };
	struct ib_user_mad *umad = (void *)buf;

	umad_address(umad, agent, to, 0, 0);
	umad_common_header(buf + HDR, VENDOR1_CLASS, GET, tid);
	return write(fd, buf, sizeof(buf)) < 0 ? -errno : 0;
}

TEST_F(faults, open_fails_cleanly_at_every_allocation)
{
	char path[128];
	int n;

	ASSERT_EQ(0, umad_path(umad_pair()->client, 1, path, sizeof(path)));
	for (n = 1; n < MAX_NTH; n++) {
		int fd, err;

		ASSERT_EQ(0, fail_nth(n));
		fd = open(path, O_RDWR);
		err = errno;
		if (!failure_injected()) {
			fail_nth(0);
			ASSERT_LE(0, fd);
			close(fd);
			break;
		}
		fail_nth(0);
		if (fd >= 0) {
			close(fd);
		} else {
			EXPECT_TRUE(err == ENOMEM || err == ENFILE)
				TH_LOG("allocation %d: %s", n, strerror(err));
		}
		/* And the node opens again. */
		fd = open(path, O_RDWR);
		ASSERT_LE(0, fd);
		close(fd);
	}
	EXPECT_LT(1, n);
}

TEST_F(faults, register_fails_cleanly_at_every_allocation)
{
	int n;

	for (n = 1; n < MAX_NTH; n++) {
		int id;

		ASSERT_EQ(0, fail_nth(n));
		id = reg(self->fd);
		if (!failure_injected()) {
			fail_nth(0);
			ASSERT_LE(0, id);
			break;
		}
		fail_nth(0);
		if (id >= 0) {
			ASSERT_EQ(0, ioctl(self->fd, IB_USER_MAD_UNREGISTER_AGENT, &id));
		} else {
			EXPECT_EQ(-ENOMEM, id)
				TH_LOG("allocation %d", n);
		}
		/* The file registers again, in the lowest slot. */
		id = reg(self->fd);
		ASSERT_EQ(0, id) TH_LOG("after allocation %d", n);
		ASSERT_EQ(0, ioctl(self->fd, IB_USER_MAD_UNREGISTER_AGENT, &id));
	}
	EXPECT_LT(1, n);
}

TEST_F(faults, write_fails_cleanly_at_every_allocation)
{
	__u64 tid = 1;
	int n, agent;

	agent = reg(self->fd);
	ASSERT_LE(0, agent);
	for (n = 1; n < MAX_NTH; n++) {
		int ret;

		ASSERT_EQ(0, fail_nth(n));
		ret = send_get(self->fd, agent, &self->peer, tid++);
		if (!failure_injected()) {
			fail_nth(0);
			ASSERT_EQ(0, ret);
			break;
		}
		fail_nth(0);
		/*
		 * The device's errnos pass through: soft-RoCE resolves the
		 * address handle with allocations of its own, and
		 * ib_loopback allocates its copy of the packet at the post.
		 */
		if (!ret)
			continue;
		EXPECT_TRUE(ret == -ENOMEM || ret == -EINVAL || ret == -EAGAIN)
			TH_LOG("allocation %d: %s", n, strerror(-ret));
		/* A failed write leaves no send behind: its TID is free. */
		ASSERT_EQ(0, send_get(self->fd, agent, &self->peer, tid - 1))
			TH_LOG("after allocation %d", n);
	}
	EXPECT_LT(1, n);
}

/* Each driver's receive handler: the function the MAD layer calls. */
static const char *recv_handler_of(const char *module)
{
	if (!strcmp(module, "ib_umad"))
		return "recv_handler";
	if (!strcmp(module, "ib_umad_rs"))
		return "recv_callback";
	return NULL;
}

TEST_F(faults, a_receive_that_cannot_allocate_drops_the_mad_and_the_next_arrives)
{
	const char *module = umad_module(), *handler;
	__u8 buf[HDR + MAD];
	unsigned long start, end;
	char path[128];
	int server, agent, i;
	struct pollfd pfd;

	ASSERT_NE(NULL, module);
	handler = recv_handler_of(module);
	ASSERT_NE(NULL, handler);
	if (access(FAILSLAB "require-start", W_OK))
		SKIP(return, "no fault-injection stack filter on this kernel");
	ASSERT_EQ(0, function_range(module, handler, &start, &end))
		TH_LOG("%s in %s not in /proc/kallsyms", handler, module);
	ASSERT_EQ(0, umad_path(umad_pair()->server, 1, path, sizeof(path)));
	server = open(path, O_RDWR | O_NONBLOCK);
	ASSERT_LE(0, server);
	ASSERT_EQ(0, reg_method(server, GET));
	agent = reg(self->fd);
	ASSERT_LE(0, agent);

	ASSERT_EQ(0, fail_below(start, end));
	ASSERT_EQ(0, send_get(self->fd, agent, &self->peer, 1));
	/*
	 * The failure is used up when the GET reaches the handler: the wait
	 * ends then, or 60 s (counted in sleeps, so no less) later. A GET
	 * takes milliseconds; the second below gets 10 s, as long only if lost.
	 */
	for (i = 0; i < 600 && read_long(FAILSLAB "times"); i++)
		usleep(100 * 1000);
	fail_nothing();
	ASSERT_EQ(0, read_long(FAILSLAB "times")) TH_LOG("the GET never reached %s", handler);
	pfd = (struct pollfd){ .fd = server, .events = POLLIN };
	EXPECT_EQ(0, poll(&pfd, 1, 0)) TH_LOG("a MAD queued without its packet");

	ASSERT_EQ(0, send_get(self->fd, agent, &self->peer, 2));
	ASSERT_EQ(1, poll(&pfd, 1, 10000));
	ASSERT_EQ(HDR + MAD, read(server, buf, sizeof(buf)));
	EXPECT_EQ(GET, buf[HDR + 3]);
	EXPECT_EQ(2, buf[HDR + 15]) TH_LOG("not the second GET");
	close(server);
}

static int load_module(const char *ko)
{
	int fd = open(ko, O_RDONLY | O_CLOEXEC), ret = 0;

	if (fd < 0)
		return -errno;
	if (syscall(SYS_finit_module, fd, "", 0))
		ret = -errno;
	close(fd);
	return ret;
}

static int unload_module(const char *name)
{
	return syscall(SYS_delete_module, name, O_NONBLOCK) ? -errno : 0;
}

/* How many of the nodes named prefix<N> belong to ibdev. */
static int nodes_of(const char *prefix, const char *ibdev)
{
	struct mad_node nodes[MAX_NODES];
	int n = list_mad_nodes(prefix, nodes, MAX_NODES), count = 0;

	for (int i = 0; i < n; i++)
		count += !strcmp(nodes[i].ibdev, ibdev);
	return count;
}

/* Whether every device has all the nodes it had at the start, or none. */
static bool devices_all_or_nothing(struct __test_metadata *_metadata,
				   const struct mad_node *umad, int n_umad, int n)
{
	bool ok = true;

	for (int i = 0; i < n_umad; i++) {
		const char *ibdev = umad[i].ibdev;
		int want = nodes_of("umad", ibdev) ? 1 : 0;
		int had = 0;

		for (int j = 0; j < n_umad; j++)
			had += !strcmp(umad[j].ibdev, ibdev);
		if (nodes_of("umad", ibdev) != want * had) {
			TH_LOG("allocation %d: %s has %d of its %d umad nodes", n, ibdev,
			       nodes_of("umad", ibdev), had);
			ok = false;
		}
		if (!want && nodes_of("issm", ibdev)) {
			TH_LOG("allocation %d: %s has issm nodes but no umad node", n, ibdev);
			ok = false;
		}
	}
	return ok;
}

/* Whether after[] has each node of before[] by name, for the same port. */
static bool same_nodes(struct __test_metadata *_metadata, const struct mad_node *before,
		       const struct mad_node *after, int n)
{
	bool ok = true;

	for (int i = 0; i < n; i++) {
		int j = 0;

		while (j < n && strcmp(before[i].name, after[j].name))
			j++;
		if (j == n || strcmp(before[i].ibdev, after[j].ibdev) ||
		    before[i].port != after[j].port) {
			TH_LOG("%s was %s/%d", before[i].name, before[i].ibdev, before[i].port);
			ok = false;
		}
	}
	return ok;
}

/* The harness has per-test timeouts only for fixtures. */
FIXTURE(load) {
	char kunit_glob[256];
	bool kunit_filtered;
};

FIXTURE_SETUP(load)
{
}

FIXTURE_TEARDOWN(load)
{
	fail_nth(0);
	fail_nothing();
	write_attr(FAILSLAB "ignore-gfp-wait", "Y");
	/* "(null)", KUnit's default, runs every suite, as "*.*" does. */
	if (self->kunit_filtered)
		write_attr(KUNIT_FILTER_GLOB,
			   strcmp(self->kunit_glob, "(null)") ? self->kunit_glob : "*.*");
}

/*
 * Loading the driver with devices present: the driver's init (class, char
 * device regions, the packet cache, the two IB clients) and the add of
 * every device; with the stack filter, not the module loader's allocations
 * before init, which are the same for every module. A failed load leaves no
 * class, region or node behind; a load whose device add failed has no
 * nodes of that device and all of the others', and unloads.
 *
 * Not failed: allocations under SLUB's sysfs_slab_add, which leaks the
 * cache's kobject name when it fails (CVE-2024-25740; upstream since lets
 * cache creation go on without sysfs, commit 2420baa8e046). C creates no
 * cache; ib_umad_rs does, and would show the kernel's leak as its own.
 */
TEST_F_TIMEOUT(load, a_load_that_cannot_allocate_leaves_nothing_behind, 1200)
{
	unsigned long start, end;
	struct mad_node umad_before[MAX_NODES], umad_after[MAX_NODES];
	struct mad_node issm_before[MAX_NODES], issm_after[MAX_NODES];
	const char *module = umad_module();
	int n_umad, n_issm, n, ret;
	char name[64], ko[512];
	struct stat st;

	if (!fail_nth_available())
		SKIP(return, "no fail-nth or failslab on this kernel");
	ASSERT_NE(NULL, module) TH_LOG("no umad driver loaded");
	snprintf(name, sizeof(name), "%s", module);
	if (module_file(name, ko, sizeof(ko)))
		SKIP(return, "modules.dep lists no %s.ko to load", name);
	n_umad = list_mad_nodes("umad", umad_before, MAX_NODES);
	n_issm = list_mad_nodes("issm", issm_before, MAX_NODES);
	ASSERT_LT(0, n_umad);
	ASSERT_EQ(0, write_attr(FAILSLAB "ignore-gfp-wait", "N"));
	ASSERT_EQ(0, write_attr(FAILSLAB "verbose", "0"));
	/*
	 * With the stack filter: only the driver's init (and the device adds
	 * it makes), not the module loader's own allocations before it.
	 */
	if (!access(FAILSLAB "reject-start", W_OK)) {
		ASSERT_EQ(0, function_range(NULL, "do_init_module", &start, &end));
		ASSERT_EQ(0, fail_range("require", start, end));
		ASSERT_EQ(0, function_range(NULL, "sysfs_slab_add", &start, &end));
		ASSERT_EQ(0, fail_range("reject", start, end));
		ASSERT_EQ(0, write_attr(FAILSLAB "stacktrace-depth", "32"));
	}
	/*
	 * A kernel with KUnit runs a module's suites at each of its loads, in
	 * do_init_module(): their allocations are not the driver's init's, and
	 * every load would run them all again. None runs while loads fail
	 * (kunit.filter_glob; the teardown puts it back).
	 */
	if (!read_attr(KUNIT_FILTER_GLOB, self->kunit_glob, sizeof(self->kunit_glob))) {
		ASSERT_EQ(0, write_attr(KUNIT_FILTER_GLOB, "umad_faults_runs_no_suite"));
		self->kunit_filtered = true;
	}
	ASSERT_EQ(0, unload_module(name));

	for (n = 1; n < MAX_NTH_LOAD; n++) {
		ASSERT_EQ(0, fail_nth(n));
		ret = load_module(ko);
		if (!failure_injected()) {
			fail_nth(0);
			ASSERT_EQ(0, ret);
			break;
		}
		fail_nth(0);
		if (ret) {
			EXPECT_EQ(-ENOMEM, ret) TH_LOG("allocation %d: %s", n, strerror(-ret));
			ASSERT_NE(0, stat(SYS_MAD_CLASS, &st))
				TH_LOG("allocation %d: the class outlived a failed load", n);
			continue;
		}
		ASSERT_TRUE(devices_all_or_nothing(_metadata, umad_before, n_umad, n));
		ASSERT_EQ(0, unload_module(name)) TH_LOG("after allocation %d", n);
		ASSERT_NE(0, stat(SYS_MAD_CLASS, &st)) TH_LOG("after allocation %d", n);
	}
	ASSERT_GT(MAX_NTH_LOAD, n) TH_LOG("the load never got through");
	EXPECT_LT(1, n);
	/*
	 * The load that got through gave every port its nodes, numbered as
	 * before.
	 */
	ASSERT_EQ(n_umad, list_mad_nodes("umad", umad_after, MAX_NODES));
	ASSERT_EQ(n_issm, list_mad_nodes("issm", issm_after, MAX_NODES));
	EXPECT_TRUE(same_nodes(_metadata, umad_before, umad_after, n_umad));
	EXPECT_TRUE(same_nodes(_metadata, issm_before, issm_after, n_issm));
	TH_LOG("%d allocations failed in turn", n - 1);
}

TEST_HARNESS_MAIN
