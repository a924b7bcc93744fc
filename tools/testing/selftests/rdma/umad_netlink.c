// SPDX-License-Identifier: GPL-2.0
/*
 * RDMA_NLDEV_CMD_GET_CHARDEV: how rdma-core asks the kernel which character
 * device serves a client ("umad", "issm") on a port.
 */
#include <sys/stat.h>
#include <sys/syscall.h>

#include "../kselftest_harness.h"
#include "umad_test.h"
#include "umad_nl.h"

UMAD_NEEDS_PAIR

struct chardev {
	uint64_t devt;
	uint64_t abi;
	char name[64];
};

static void chardev_attr(struct nlattr *attr, void *arg)
{
	struct chardev *c = arg;
	void *data = (char *)attr + NLA_HDRLEN;

	if (attr->nla_type == RDMA_NLDEV_ATTR_CHARDEV)
		memcpy(&c->devt, data, sizeof(c->devt));
	else if (attr->nla_type == RDMA_NLDEV_ATTR_CHARDEV_ABI)
		memcpy(&c->abi, data, sizeof(c->abi));
	else if (attr->nla_type == RDMA_NLDEV_ATTR_CHARDEV_NAME)
		snprintf(c->name, sizeof(c->name), "%s", (char *)data);
}

/* A port number that get_chardev leaves out of the query. */
#define NO_PORT UINT32_MAX

/* GET_CHARDEV for client on ibdev/port; 0 or -errno. */
static int get_chardev(const char *ibdev, uint32_t port, const char *client,
		       struct chardev *out)
{
	uint32_t buf[NL_BUF / 4];
	struct nlmsghdr *nlh = (void *)buf;
	int fd, index, ret;
	ssize_t len;

	fd = nl_open();
	if (fd < 0)
		return fd;
	index = dev_index(fd, ibdev);
	if (index < 0) {
		close(fd);
		return index;
	}
	memset(buf, 0, sizeof(buf));
	nlh->nlmsg_len = NLMSG_HDRLEN;
	nlh->nlmsg_type = RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_GET_CHARDEV);
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
	nl_put(nlh, RDMA_NLDEV_ATTR_DEV_INDEX, &index, sizeof(uint32_t));
	if (port != NO_PORT)
		nl_put(nlh, RDMA_NLDEV_ATTR_PORT_INDEX, &port, sizeof(port));
	nl_put(nlh, RDMA_NLDEV_ATTR_CHARDEV_TYPE, client, strlen(client) + 1);
	ret = send(fd, buf, nlh->nlmsg_len, 0) < 0 ? -errno : -ENODATA;
	memset(out, 0, sizeof(*out));
	while (ret == -ENODATA) {
		len = recv(fd, buf, sizeof(buf), 0);
		if (len < 0) {
			ret = -errno;
			break;
		}
		for (nlh = (void *)buf; NLMSG_OK(nlh, len); nlh = NLMSG_NEXT(nlh, len)) {
			if (nlh->nlmsg_type == NLMSG_ERROR) {
				ret = ((struct nlmsgerr *)NLMSG_DATA(nlh))->error;
				break;
			}
			nl_attrs(nlh, chardev_attr, out);
		}
	}
	close(fd);
	return ret;
}

/*
 * The client called name (umad or issm) names each of nodes[n] by netlink:
 * its name, the ABI version and the device number of /dev/infiniband/<name>.
 */
static void expect_chardevs(struct __test_metadata *_metadata, const char *name,
			    const struct mad_node *nodes, int n)
{
	struct chardev c;
	char path[128];
	struct stat st;

	for (int i = 0; i < n; i++) {
		ASSERT_EQ(0, get_chardev(nodes[i].ibdev, nodes[i].port, name, &c))
			TH_LOG("%s", nodes[i].name);
		EXPECT_STREQ(nodes[i].name, c.name);
		EXPECT_EQ(5u, c.abi);
		ASSERT_EQ(0, node_dev_path(&nodes[i], path, sizeof(path)));
		ASSERT_EQ(0, stat(path, &st));
		EXPECT_EQ(st.st_rdev, c.devt);
	}
}

TEST(umad_chardev_of_each_port)
{
	struct mad_node nodes[MAX_NODES];
	int n;

	n = list_mad_nodes("umad", nodes, MAX_NODES);
	ASSERT_GE(n, 2);
	expect_chardevs(_metadata, "umad", nodes, n);
}

/*
 * ib_umad answers EINVAL: the IB core asks its client about port -1. (A
 * port number past the device's ports the IB core refuses itself, with
 * EINVAL, before it asks any client: see ports below.)
 */
TEST(umad_chardev_without_a_port)
{
	struct chardev c;

	EXPECT_EQ(-EINVAL, get_chardev(umad_pair()->server, NO_PORT, "umad", &c));
}

/* Every RoCE port: the soft-RoCE pair's two at least. */
TEST(issm_chardev_where_the_port_has_no_smi)
{
	struct ib_port ports[MAX_NODES];
	struct chardev c;
	int n, roce = 0;

	if (umad_pair()->ib)
		SKIP(return, "the pair is ib_loopback's: InfiniBand ports, all with an SMI");
	n = list_ib_ports(ports, MAX_NODES);
	for (int i = 0; i < n; i++) {
		if (strcmp(ports[i].link_layer, "Ethernet"))
			continue;
		roce++;
		EXPECT_EQ(-EOPNOTSUPP, get_chardev(ports[i].ibdev, ports[i].port,
						   "issm", &c));
	}
	EXPECT_GE(roce, 2);
}

#define MODPROBE "/proc/sys/kernel/modprobe"
#define MODPROBE_LOG "/tmp/umad_netlink_modprobe.log"

/*
 * The issm client is attached to every device, as ib_umad's is, so a query
 * about the server's port is answered at once: EOPNOTSUPP on soft-RoCE's,
 * which has no SMI, and success on ib_loopback's, which has one. The IB core
 * looks for a client it does not find with request_module("rdma-client-issm").
 */
TEST(issm_chardev_query_loads_no_module)
{
	static const char logger[] = "/tmp/umad_netlink_modprobe.sh";
	char saved[256] = "";
	int expected = umad_pair()->ib ? 0 : -EOPNOTSUPP;
	struct chardev c;
	FILE *f;

	f = fopen(MODPROBE, "r");
	ASSERT_NE(NULL, f);
	ASSERT_NE(NULL, fgets(saved, sizeof(saved), f));
	fclose(f);
	saved[strcspn(saved, "\n")] = 0;
	f = fopen(logger, "w");
	ASSERT_NE(NULL, f);
	fprintf(f, "#!/bin/sh\necho \"$@\" >> %s\n", MODPROBE_LOG);
	fclose(f);
	ASSERT_EQ(0, chmod(logger, 0755));
	unlink(MODPROBE_LOG);
	f = fopen(MODPROBE, "w");
	ASSERT_NE(NULL, f);
	fprintf(f, "%s\n", logger);
	fclose(f);

	EXPECT_EQ(expected, get_chardev(umad_pair()->server, 1, "issm", &c));

	f = fopen(MODPROBE, "w");
	ASSERT_NE(NULL, f);
	fprintf(f, "%s\n", saved);
	fclose(f);
	EXPECT_NE(0, access(MODPROBE_LOG, F_OK)) TH_LOG("modprobe was called");
	unlink(logger);
}

/*
 * Ports with an SMI, which soft-RoCE's lack: ib_loopback's, the pair's four,
 * or one loaded here.
 */
FIXTURE(smi) {
	bool loaded_here;
};

FIXTURE_SETUP(smi)
{
	if (access(SYS_IB_CLASS "/iblo0", F_OK)) {
		if (!loopback_available())
			SKIP(return,
			     "no port with an SMI: soft-RoCE has none and ib_loopback is missing");
		ASSERT_EQ(0, LOOPBACK_LOAD("ndevs=1 nports=1"));
		self->loaded_here = true;
	}
}

/* In the parent: it runs even when a failed ASSERT ends the test. */
FIXTURE_TEARDOWN_PARENT(smi)
{
	if (self->loaded_here)
		EXPECT_EQ(0, syscall(SYS_delete_module, "ib_loopback", 0));
}

/* How many ports have the InfiniBand link layer, and so an SMI. */
static int infiniband_ports(void)
{
	struct ib_port ports[MAX_NODES];
	int n, ib = 0;

	n = list_ib_ports(ports, MAX_NODES);
	for (int i = 0; i < n; i++)
		ib += !strcmp(ports[i].link_layer, "InfiniBand");
	return ib;
}

/*
 * Where the port has an SMI, the issm client names its issmN, as the umad
 * client names umadN. Until "RDMA/umad: Answer the issm client's netlink
 * query", ib_umad's issm client had no add, so its get_nl_info found no
 * device data and answered EOPNOTSUPP for every port.
 */
TEST_F(smi, issm_chardev_of_a_port_with_an_smi)
{
	struct mad_node nodes[MAX_NODES];
	int n;

	/* One issmN on each InfiniBand port, and none on RoCE's. */
	n = list_mad_nodes("issm", nodes, MAX_NODES);
	ASSERT_LT(0, n);
	ASSERT_EQ(infiniband_ports(), n);
	expect_chardevs(_metadata, "issm", nodes, n);
}

/*
 * A device of two ports, rxe's having one each: ib_loopback's iblo0, of
 * the pair or loaded here.
 */
FIXTURE(ports) {
	bool loaded_here;
};

FIXTURE_SETUP(ports)
{
	if (access(SYS_IB_CLASS "/iblo0", F_OK)) {
		if (!loopback_available())
			SKIP(return,
			     "no device of two ports: rxe's have one, ib_loopback is missing");
		ASSERT_EQ(0, LOOPBACK_LOAD("ndevs=1 nports=2"));
		self->loaded_here = true;
	}
}

/* In the parent: it runs even when a failed ASSERT ends the test. */
FIXTURE_TEARDOWN_PARENT(ports)
{
	if (self->loaded_here)
		EXPECT_EQ(0, syscall(SYS_delete_module, "ib_loopback", 0));
}

/*
 * The umad client names each port's node up to the device's last, which
 * here is not its first: a client that maps port numbers to its ports
 * wrongly names another node, and one whose range of numbers is one short
 * refuses the last. Port 3 is past the last: that EINVAL is the IB core's,
 * which checks the number before it asks any client (so it holds with no
 * driver at all), and is here only as the bound of the range.
 */
TEST_F(ports, umad_chardev_of_the_last_port_and_none_past_it)
{
	struct mad_node nodes[MAX_NODES];
	const struct mad_node *node;
	struct chardev c;
	int n;

	n = list_mad_nodes("umad", nodes, MAX_NODES);
	for (int port = 1; port <= 2; port++) {
		node = find_node(nodes, n, "iblo0", port);
		ASSERT_NE(NULL, node) TH_LOG("no umad node of iblo0 port %d", port);
		ASSERT_EQ(0, get_chardev("iblo0", port, "umad", &c)) TH_LOG("port %d", port);
		EXPECT_STREQ(node->name, c.name);
	}
	EXPECT_EQ(-EINVAL, get_chardev("iblo0", 3, "umad", &c));
}

TEST_HARNESS_MAIN
