/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the umad selftests: sysfs lookups of the IB devices and
 * of the infiniband_mad class, the way libibumad and udev see them.
 */
#ifndef UMAD_TEST_H
#define UMAD_TEST_H

/*
 * The harness gives each test 30 s, too little for device removal cycles
 * on KASAN and KCSAN kernels of emulated SMP guests. A hang is still
 * caught: by this limit, and by the runner's per-program one.
 */
#ifdef TEST_TIMEOUT_DEFAULT
#undef TEST_TIMEOUT_DEFAULT
#define TEST_TIMEOUT_DEFAULT 180
#endif

/*
 * Helpers name a fixture's data by the struct FIXTURE_DATA(name) expands
 * to, struct _test_data_<name>: checkpatch misreads the macro there.
 */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>
#include <sys/utsname.h>
#include <linux/types.h>

/*
 * Time in these tests: no verdict may depend on the machine's speed. The
 * slowest machine these are known to run on is an emulated guest with a
 * KASAN kernel, on 2 cores shared with a kernel build; each time a test
 * compares must hold on one twice as slow as that. A lower bound on how long something took
 * holds by nature: a slower guest only takes longer. An upper bound, or a
 * "must happen within", either comes from what the test measured or has a
 * margin its comment gives.
 *
 * A request that is answered ends at the answer, so its timeout costs
 * nothing, and a long one (ANSWERED_MS) keeps a slow answer from being
 * taken for a timeout. A test that waits for a timeout asks for a short one.
 */
#define ANSWERED_MS 60000

/*
 * The clock of the kernel's jiffies, for bounds on what runs on them (MAD
 * timeouts and retries, ib_loopback's delay_ms, printk_ratelimited's
 * windows). A loaded guest updates jiffies late, and a timer armed on late
 * jiffies ends early by CLOCK_MONOTONIC: a MAD timeout was seen 11 ms short
 * of what it asked on a loaded machine. CLOCK_MONOTONIC_COARSE is the time of
 * the last tick, updated in the same tick as jiffies (tick_do_update_jiffies64()
 * ends in update_wall_time()): each lags the other by less than a tick, so
 * on this clock a span of jiffies is its length within a tick at each end.
 */
static inline void jiffies_clock(struct timespec *t)
{
	clock_gettime(CLOCK_MONOTONIC_COARSE, t);
}

/* Nanoseconds on the jiffies clock from since to now. */
static inline long long jiffies_ns_since(const struct timespec *since)
{
	struct timespec now;

	jiffies_clock(&now);
	return (now.tv_sec - since->tv_sec) * 1000000000LL + now.tv_nsec - since->tv_nsec;
}

/* A tick, the jiffies clock's resolution, in ns (10 ms, HZ=100's, if unknown). */
static inline long long tick_ns(void)
{
	struct timespec res;

	if (clock_getres(CLOCK_MONOTONIC_COARSE, &res) || (!res.tv_sec && !res.tv_nsec))
		return 10000000;
	return res.tv_sec * 1000000000LL + res.tv_nsec;
}

/*
 * The longest that timers of jiffies armed after since can have run by now,
 * in ms: the jiffies clock's time, plus a tick for each end. Timers of
 * N ms in all, one after the other, have run their course only if this is
 * N or more, however late the guest's jiffies.
 */
static inline long jiffies_waited_ms(const struct timespec *since)
{
	return (jiffies_ns_since(since) + 2 * tick_ns()) / 1000000;
}

#define SYS_MAD_CLASS "/sys/class/infiniband_mad"
#define SYS_IB_CLASS "/sys/class/infiniband"
#define UMAD_MAJOR 231
#define UMAD_FIXED_MINORS 64
#define MAX_NODES 256

/* A umadN or issmN node, as sysfs describes it. */
struct mad_node {
	char name[32];
	int devnum;
	char ibdev[64];
	int port;
	unsigned int major, minor;
};

/* An IB device's port, from /sys/class/infiniband. */
struct ib_port {
	char ibdev[64];
	int port;
	char link_layer[32];
};

/* Reads a sysfs file into buf without its trailing newline; -errno on error. */
static inline int read_attr(const char *path, char *buf, size_t len)
{
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	if (n && buf[n - 1] == '\n')
		buf[n - 1] = '\0';
	return 0;
}

/* Writes value to a sysfs or debugfs file; -errno on error. */
static inline int write_attr(const char *path, const char *value)
{
	int fd = open(path, O_WRONLY), ret = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, value, strlen(value)) < 0)
		ret = -errno;
	close(fd);
	return ret;
}

/*
 * A thread blocked in a system call, for the tests that act on one: a
 * sleep "to let it block" cannot tell whether it did, and on a slow guest
 * the call has not begun when the test acts, which then tests something
 * else.
 *
 * The system call of glibc's poll(), and of libibumad's umad_recv() and
 * umad_poll() through it: poll, or ppoll where the architecture has none.
 */
#ifdef __NR_poll
#define NR_POLL __NR_poll
#else
#define NR_POLL __NR_ppoll
#endif

/*
 * Whether thread tid of this process is asleep in system call nr. The
 * kernel says which call a thread is in, in /proc/self/task/<tid>/syscall
 * (x86 has it: HAVE_ARCH_TRACEHOOK), only while the thread is off the CPU
 * ("running" otherwise; task_current_syscall() waits for it to be off,
 * and checks it stayed off); stat's state then says it sleeps (S, D) and
 * is not stopped. The numbers are this build's __NR_ constants: the kernel
 * gives a 32-bit program's calls their i386 numbers too. (wchan would
 * name the kernel function the thread sleeps in, which is the driver's
 * own, not the same in C and Rust, and says nothing of the call.)
 */
static inline bool blocked_in(pid_t tid, long nr)
{
	char path[64], buf[256], *end;

	snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", tid);
	if (read_attr(path, buf, sizeof(buf)) || strtol(buf, &end, 10) != nr || end == buf)
		return false;
	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
	if (read_attr(path, buf, sizeof(buf)))
		return false;
	/* The state follows the command name, which may hold ')' itself. */
	end = strrchr(buf, ')');
	return end && end[1] == ' ' && (end[2] == 'S' || end[2] == 'D');
}

/*
 * Waits until the thread whose id is in *tid is asleep in system call nr
 * (the thread sets *tid with gettid() before the call; 0 until then).
 * False if it is not within 30 s, counted in sleeps (so never less): a
 * call that is to block does as soon as its thread runs, which even a
 * loaded guest lets it do in far less.
 */
static inline bool wait_blocked_in(const atomic_int *tid, long nr)
{
	for (int i = 0; i < 15000; i++) {
		pid_t t = atomic_load(tid);

		if (t && blocked_in(t, nr))
			return true;
		usleep(2000);
	}
	return false;
}

static inline int read_node_attr(const char *node, const char *attr, char *buf,
				 size_t len)
{
	char path[256];

	if (snprintf(path, sizeof(path), SYS_MAD_CLASS "/%s/%s", node, attr) >=
	    (int)sizeof(path))
		return -ENAMETOOLONG;
	return read_attr(path, buf, len);
}

/* Fills nodes[] with the class's nodes named prefix<N>; returns how many. */
static inline int list_mad_nodes(const char *prefix, struct mad_node *nodes,
				 int max)
{
	size_t plen = strlen(prefix);
	struct dirent *de;
	char buf[64];
	int n = 0;
	DIR *dir;

	dir = opendir(SYS_MAD_CLASS);
	if (!dir)
		return 0;
	while ((de = readdir(dir)) && n < max) {
		struct mad_node *node = &nodes[n];
		char *end;

		if (strncmp(de->d_name, prefix, plen) || !de->d_name[plen])
			continue;
		node->devnum = strtol(de->d_name + plen, &end, 10);
		if (*end)
			continue;
		if (snprintf(node->name, sizeof(node->name), "%s", de->d_name) >=
		    (int)sizeof(node->name))
			continue;
		if (read_node_attr(de->d_name, "ibdev", node->ibdev,
				   sizeof(node->ibdev)) ||
		    read_node_attr(de->d_name, "port", buf, sizeof(buf)))
			continue;
		node->port = atoi(buf);
		if (read_node_attr(de->d_name, "dev", buf, sizeof(buf)) ||
		    sscanf(buf, "%u:%u", &node->major, &node->minor) != 2)
			continue;
		n++;
	}
	closedir(dir);
	return n;
}

/* Fills ports[] with every port of every IB device; returns how many. */
static inline int list_ib_ports(struct ib_port *ports, int max)
{
	struct dirent *dev, *port;
	char path[256];
	DIR *devs, *dir;
	int n = 0;

	devs = opendir(SYS_IB_CLASS);
	if (!devs)
		return 0;
	while ((dev = readdir(devs))) {
		if (dev->d_name[0] == '.')
			continue;
		if (snprintf(path, sizeof(path), SYS_IB_CLASS "/%s/ports",
			     dev->d_name) >= (int)sizeof(path))
			continue;
		dir = opendir(path);
		if (!dir)
			continue;
		while ((port = readdir(dir)) && n < max) {
			if (port->d_name[0] == '.')
				continue;
			if (snprintf(ports[n].ibdev, sizeof(ports[n].ibdev), "%s",
				     dev->d_name) >= (int)sizeof(ports[n].ibdev) ||
			    snprintf(path, sizeof(path),
				     SYS_IB_CLASS "/%s/ports/%s/link_layer",
				     dev->d_name, port->d_name) >= (int)sizeof(path))
				continue;
			ports[n].port = atoi(port->d_name);
			if (read_attr(path, ports[n].link_layer,
				      sizeof(ports[n].link_layer)))
				continue;
			n++;
		}
		closedir(dir);
	}
	closedir(devs);
	return n;
}

/* The node of nodes[] for ibdev/port, or NULL. */
static inline const struct mad_node *find_node(const struct mad_node *nodes,
					       int n, const char *ibdev, int port)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(nodes[i].ibdev, ibdev) && nodes[i].port == port)
			return &nodes[i];
	return NULL;
}

/* Parses the GID at index of ibdev/port from sysfs; -errno on error. */
static inline int read_gid(const char *ibdev, int port, int index,
			   unsigned char gid[16])
{
	unsigned int w[8];
	char path[256], buf[64];
	int ret;

	snprintf(path, sizeof(path), SYS_IB_CLASS "/%s/ports/%d/gids/%d", ibdev,
		 port, index);
	ret = read_attr(path, buf, sizeof(buf));
	if (ret)
		return ret;
	if (sscanf(buf, "%x:%x:%x:%x:%x:%x:%x:%x", &w[0], &w[1], &w[2], &w[3],
		   &w[4], &w[5], &w[6], &w[7]) != 8)
		return -EINVAL;
	for (int i = 0; i < 8; i++) {
		gid[2 * i] = w[i] >> 8;
		gid[2 * i + 1] = w[i] & 0xff;
	}
	return 0;
}

/* The device file of node: /dev/infiniband/<name>; -ENAMETOOLONG if len is short. */
static inline int node_dev_path(const struct mad_node *node, char *path,
				size_t len)
{
	if (snprintf(path, len, "/dev/infiniband/%s", node->name) >= (int)len)
		return -ENAMETOOLONG;
	return 0;
}

/* /dev/infiniband/<prefix>N of ibdev/port into path; -ENOENT if none. */
static inline int mad_node_path(const char *prefix, const char *ibdev, int port,
				char *path, size_t len)
{
	struct mad_node nodes[MAX_NODES];
	const struct mad_node *node;
	int n;

	n = list_mad_nodes(prefix, nodes, MAX_NODES);
	node = find_node(nodes, n, ibdev, port);
	if (!node)
		return -ENOENT;
	return node_dev_path(node, path, len);
}

/* /dev/infiniband/umadN of ibdev/port into path; -ENOENT if none. */
static inline int umad_path(const char *ibdev, int port, char *path, size_t len)
{
	return mad_node_path("umad", ibdev, port, path, len);
}

/*
 * The test HCA, ib_loopback (CONFIG_INFINIBAND_LOOPBACK): whether modprobe
 * can find it, its load with the given parameters, and its debugfs knobs.
 */
static inline bool loopback_available(void)
{
	return !system("modinfo ib_loopback > /dev/null 2>&1");
}

#define LOOPBACK_LOAD(params) system("modprobe ib_loopback " params)
#define LOOPBACK_DBG "/sys/kernel/debug/ib_loopback/"

/*
 * The two ports that the GSI tests move MADs between: port 1 of the client
 * device and port 1 of the server device, cabled to each other. Tests that
 * remove a device remove the server and put it back.
 *
 * Where soft-RoCE is in use (rdma_rxe loaded), they are rxe0 and rxe1 on
 * the two ends of a veth pair, which the test environment sets up:
 *   ip link add vethA type veth peer name vethB
 *   ip link set vethA up; ip link set vethB up
 *   rdma link add rxe0 type rxe netdev vethA
 *   rdma link add rxe1 type rxe netdev vethB
 * Where it is not, they are ib_loopback's iblo0 and iblo1, of two ports
 * each, which a program that needs the pair loads before its first test
 * and unloads after its last.
 */
struct umad_pair {
	const char *client, *server;
	bool ib;	/* ib_loopback's: IB link layer, an SMI and issm nodes */
};

#define LOOPBACK_PAIR_PARAMS "ndevs=2 nports=2"

/*
 * Whether soft-RoCE is in use: rdma_rxe loaded, or an rxe device there.
 * Then the pair is rxe's, and a missing rxe1 is a skip, not a reason to
 * test another link layer.
 */
static inline bool kernel_has_rxe(void)
{
	return !access("/sys/module/rdma_rxe", F_OK) || !access(SYS_IB_CLASS "/rxe0", F_OK);
}

/* The pair this kernel has. */
static inline const struct umad_pair *umad_pair(void)
{
	static const struct umad_pair rxe = { .client = "rxe0", .server = "rxe1" };
	static const struct umad_pair loopback = {
		.client = "iblo0", .server = "iblo1", .ib = true,
	};
	static const struct umad_pair *pair;

	if (!pair)
		pair = kernel_has_rxe() ? &rxe : &loopback;
	return pair;
}

static inline void umad_pair_unload(void)
{
	if (syscall(SYS_delete_module, "ib_loopback", 0))
		ksft_print_msg("unloading ib_loopback: %s\n", strerror(errno));
}

/*
 * A program whose tests use the pair says so with UMAD_NEEDS_PAIR after its
 * includes: without one, it skips as a whole before its first test (and
 * fails where ib_loopback is loaded already, or does not load). Its tests
 * run in children of the harness, which leave with _exit(): the
 * ib_loopback pair is unloaded when the harness itself exits.
 */
static inline void umad_require_pair(void)
{
	const char *fault = NULL;

	/*
	 * Settled here, before the harness forks: a test's parent may ask
	 * for the pair after its child removed the server.
	 */
	if (!umad_pair()->ib) {
		if (access(SYS_IB_CLASS "/rxe0", F_OK) || access(SYS_IB_CLASS "/rxe1", F_OK)) {
			ksft_print_header();
			ksft_exit_skip("no rxe0 and rxe1 (soft-RoCE on vethA and vethB)\n");
		}
		return;
	}
	if (!loopback_available()) {
		ksft_print_header();
		ksft_exit_skip("no rdma_rxe, and no ib_loopback\n");
	}
	if (!access("/sys/module/ib_loopback", F_OK))
		fault = "ib_loopback is loaded already";
	else if (LOOPBACK_LOAD(LOOPBACK_PAIR_PARAMS))
		fault = "modprobe ib_loopback " LOOPBACK_PAIR_PARAMS " failed";
	if (fault) {
		ksft_print_header();
		ksft_exit_fail_msg("no rdma_rxe, and %s\n", fault);
	}
	atexit(umad_pair_unload);
	if (access(LOOPBACK_DBG "add_device", W_OK)) {
		ksft_print_header();
		ksft_exit_skip("no debugfs, where ib_loopback removes and adds devices\n");
	}
}

#define UMAD_NEEDS_PAIR							\
	static void __attribute__((constructor)) umad_needs_pair(void)	\
	{								\
		umad_require_pair();					\
	}

/* Removes ib_loopback's device called name; 0 or -errno. */
static inline int loopback_remove_device(const char *name)
{
	return write_attr(LOOPBACK_DBG "remove_device", name);
}

/*
 * Adds an ib_loopback device of nports ports (a decimal string), with the
 * lowest free index: a device removed comes back with its name, LIDs and
 * GIDs. 0 or -errno.
 */
static inline int loopback_add_device(const char *nports)
{
	return write_attr(LOOPBACK_DBG "add_device", nports);
}

/* Removes the pair's server device; 0, or what failed. */
static inline int umad_server_remove(void)
{
	if (umad_pair()->ib)
		return loopback_remove_device("iblo1");
	return system("rdma link delete rxe1");
}

/*
 * Puts the server back: iblo1 again, or rxe1, whose link-local GID comes a
 * moment after the device, from the IB core's netdev events, and a MAD
 * sent to it before then is lost: the wait ends when the GID comes; its
 * limit, 30 s (counted in sleeps, so never less), only decides how long a
 * missing GID takes to fail.
 */
static inline int umad_server_add(void)
{
	char gid[64];
	int ret;

	if (umad_pair()->ib)
		return loopback_add_device("2");
	ret = system("rdma link add rxe1 type rxe netdev vethB");
	if (ret)
		return ret;
	for (int i = 0; i < 300; i++) {
		if (!read_attr(SYS_IB_CLASS "/rxe1/ports/1/gids/0", gid, sizeof(gid)) &&
		    !strncmp(gid, "fe80", 4))
			return 0;
		usleep(100 * 1000);
	}
	return -ETIMEDOUT;
}

/* A port's address: its LID (0 on RoCE, where only the GID routes) and GID 0. */
struct umad_port_addr {
	__u16 lid;	/* host order */
	__u8 gid[16];
};

/* The address of ibdev/port from sysfs; -errno on error. */
static inline int read_port_addr(const char *ibdev, int port, struct umad_port_addr *addr)
{
	char path[256], buf[32];
	int ret;

	snprintf(path, sizeof(path), SYS_IB_CLASS "/%s/ports/%d/lid", ibdev, port);
	ret = read_attr(path, buf, sizeof(buf));
	if (ret)
		return ret;
	addr->lid = strtoul(buf, NULL, 0);
	return read_gid(ibdev, port, 0, addr->gid);
}

/*
 * The file of the loaded module called name, as depmod lists it in
 * modules.dep: 0, or -1 where it lists none (or size is too short for it).
 */
static inline int module_file(const char *name, char *path, size_t size)
{
	char dep[256], line[4096], want[80];
	struct utsname uts;
	size_t len;
	FILE *f;

	if (uname(&uts))
		return -1;
	snprintf(dep, sizeof(dep), "/lib/modules/%s/modules.dep", uts.release);
	snprintf(want, sizeof(want), "/%s.ko:", name);
	f = fopen(dep, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		char *colon = strchr(line, ':');

		if (!colon)
			continue;
		len = colon + 1 - line;
		if (len < strlen(want) || strncmp(colon + 1 - strlen(want), want, strlen(want)))
			continue;
		*colon = '\0';
		if (line[0] == '/')
			len = snprintf(path, size, "%s", line);
		else
			len = snprintf(path, size, "/lib/modules/%s/%s", uts.release, line);
		fclose(f);
		return len < size ? 0 : -1;
	}
	fclose(f);
	return -1;
}

/*
 * Whether the C ib_umad under test has the fixes of the faults that would
 * oops it: yes, unless UMAD_C_FIXED=0 in the environment says that it is
 * a kernel from before them, where the tests that would oops it fail
 * without running the case.
 */
static inline bool c_driver_fixed(void)
{
	const char *fixed = getenv("UMAD_C_FIXED");

	return !fixed || strcmp(fixed, "0");
}

/* The loaded umad driver's module name (ib_umad or ib_umad_rs), or NULL. */
static inline const char *umad_module(void)
{
	static char name[64];
	char line[256];
	FILE *f;

	f = fopen("/proc/modules", "r");
	if (!f)
		return NULL;
	name[0] = '\0';
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%63s", name) == 1 &&
		    (!strcmp(name, "ib_umad") || !strcmp(name, "ib_umad_rs")))
			break;
		name[0] = '\0';
	}
	fclose(f);
	return name[0] ? name : NULL;
}

#endif
