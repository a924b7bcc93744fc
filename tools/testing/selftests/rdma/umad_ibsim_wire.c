// SPDX-License-Identifier: GPL-2.0
/*
 * umad_ibsim_wire: carries the wire of ib_loopback's wired devices to ibsim, a
 * fabric simulator, as one of its clients: the fabric's subnet then ends
 * in a real HCA port of this kernel, and a subnet manager, libibumad, the
 * umad driver and the MAD layer on it are all real, only the wire is
 * simulated.
 *
 *   umad_ibsim_wire IBDEV=NODE...   e.g. umad_ibsim_wire iblo2=H-1
 *
 * Each IBDEV (a wired device: "wire" written to ib_loopback's add_device)
 * is attached to ibsim's node NODE (its node id or description; its first
 * port), as that node's SM client: ibsim gives such a client the requests
 * that reach the node, and IsSM is what the kernel's capability mask says
 * (an issmN open). IBSIM_SOCKNAME names ibsim's sockets, as for ibsim.
 *
 * What the two ends disagree on, mended here:
 *  - ibsim puts its client's index in bits 48-63 of a request's TID and
 *    leaves it there in the response; the MAD layer matches responses by
 *    the whole TID. The bits a request had are kept, and put back into its
 *    responses (an RMPP response's segments all have its TID).
 *  - The MAD layer sends a directed-route SMP with its hop pointer already
 *    advanced past the HCA (1 for a request, the hop count for a
 *    response); ibsim wants the SMP as the SM built it, with 0.
 *  - ibsim tells nobody when a port changes: the port's PortInfo is asked
 *    for again before an answer about the port itself reaches the kernel,
 *    and every POLL_MS, and the kernel gets it when it changed; a
 *    ClientReregister the SM set on the port, which ibsim does not keep,
 *    goes with the next.
 *  - A MAD ibsim could not deliver comes back to its sender with status
 *    110: it is dropped, as a real fabric would have dropped it, and the
 *    MAD layer times it out.
 *  - A directed-route request to the port (an SMInfo of another SM) has
 *    no way in: the MAD layer gives such an SMP to the device's SMA, which
 *    a wired device has not. It is dropped, and counted.
 * ibsim, single-threaded, stops when it cannot send to us: what it sends
 * is read whenever it is there, into an inbox, even while we wait for an
 * answer to a control request; what we send it waits in a backlog when
 * its socket is full, and the wire is left unread while a backlog is full.
 *
 * It runs until SIGTERM or SIGINT, or until ibsim or the wire goes away;
 * closing the wire takes the wired ports down. At exit it prints what it
 * carried: "umad_ibsim_wire: out N in N resent N bounced N unmatched N
 * dropped N", resent counting the requests sent again with a TID it held:
 * the MAD layer's retries (and an SM's repress of a trap sent again).
 */
#include <arpa/inet.h>
#include <assert.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "../../../../drivers/infiniband/sw/ib_loopback/ib_loopback_wire.h"

#define WIRE		"/sys/kernel/debug/ib_loopback/wire"
#define SYSFS_IB	"/sys/class/infiniband"
#define MAX_CLIENTS	10	/* ibsim's limit */
#define POLL_MS		200
#define ANSWER_MS	10000	/* a control request's answer; else ibsim is gone */
#define BACKLOG		1024	/* MADs for ibsim whose socket is full */
#define BATCH		64	/* messages a pass takes from one source */
#define PORT_INFO_LEN	64
#define STATUS_BOUNCED	110

/* ibsim's protocol (its include/ibsim.h), as it is on the wire. */
enum sim_ctl_type {
	SIM_CTL_ERROR = 0,
	SIM_CTL_CONNECT = 1,
	SIM_CTL_DISCONNECT = 2,
	SIM_CTL_GET_GUID = 6,
	SIM_CTL_GET_PORTINFO = 8,
	SIM_CTL_SET_ISSM = 9,
};

#define SIM_MAGIC	0xdeadbeef
#define SIM_CTL_DATA	64

struct sim_ctl {		/* host order */
	uint32_t magic;
	uint32_t clientid;
	uint32_t type;
	uint32_t len;
	char data[SIM_CTL_DATA];
};

struct sim_client_info {	/* host order */
	uint32_t id;
	uint32_t qp;
	uint32_t issm;
	char nodeid[32];
};

struct sim_request {
	uint32_t dlid;		/* htons(LID) */
	uint32_t slid;
	uint32_t dqp;		/* htonl */
	uint32_t sqp;
	uint32_t status;	/* htonl */
	uint64_t length;	/* htobe64 */
	uint8_t mad[256];
};

static_assert(sizeof(struct sim_ctl) == 80, "ibsim's sim_ctl");
static_assert(sizeof(struct sim_client_info) == 44, "ibsim's sim_client_info");
/* As ibsim has it on the 64-bit hosts that run it (amd64, arm64). */
static_assert(offsetof(struct sim_request, length) == 24, "ibsim's sim_request");
static_assert(sizeof(struct sim_request) == 288, "ibsim's sim_request");
static_assert(sizeof(struct lo_wire_msg) == 284, "ib_loopback_wire.h");

/* The MAD header's and the SMP's bytes this program reads or writes. */
#define MAD_CLASS	1
#define MAD_METHOD	3
#define SMP_STATUS	4	/* its top bit: the direction, D */
#define SMP_HOP_PTR	6
#define SMP_HOP_CNT	7
#define MAD_TID		8
#define MAD_ATTR_ID	16
#define SMP_DATA	64
#define METHOD_SET	0x02
#define METHOD_RESP	0x80
#define CLASS_SMP_DR	0x81
#define CLASS_SMP_LID	0x01
/* The RMPP header, in the classes that have one (not the SMPs'). */
#define RMPP_TYPE	25
#define RMPP_FLAGS	26
#define RMPP_TYPE_DATA	1
#define RMPP_ACTIVE	0x01
#define ATTR_PORT_INFO	0x0015
#define PI_STATE	33	/* PortInfo: link speed, port state */
#define PI_REREG	52	/* PortInfo: ClientReregister (0x80), ... */
#define CLIENT_REREG	0x80
#define QP1_QKEY	0x80010000
#define DEFAULT_PKEY	0xffff
#define CAP_IS_SM	0x00000002	/* PortInfo:CapabilityMask.IsSM */

enum issm { ISSM_UNKNOWN = -1, ISSM_OFF, ISSM_ON };

struct client {
	unsigned int dev;	/* iblo<dev> */
	char node[32];
	uint32_t index;		/* ibsim's */
	unsigned long id;	/* our sockets' names: ctl<id>, in<id> */
	int ctl;
	int data;
	bool told;		/* the wire gave its capability mask */
	enum issm issm;
	bool rereg;		/* the SM set ClientReregister on the port */
	uint8_t port_info[PORT_INFO_LEN];
	bool port_info_known;
	/* What ibsim sent, not yet taken: a ring that grows. */
	struct sim_request *inbox;
	size_t inbox_head, inbox_count, inbox_size;
	/* What we send ibsim, while its socket is full. */
	struct sim_request backlog[BACKLOG];
	unsigned int backlog_head, backlog_count;
};

static struct client clients[MAX_CLIENTS];
static unsigned int nclients;
static int wire = -1;
static const char *sockname = "sim";
static unsigned long long n_out, n_in, n_resent, n_bounced, n_unmatched, n_dropped;

/*
 * TID bits 48-63 of the requests the kernel sent, by the rest of the TID:
 * open addressing, an entry a request. An entry stays after the first
 * response (an RMPP response comes in many segments, all with its TID),
 * and is forgotten once its slot is wanted and it is older than STALE_S,
 * longer than any transaction takes.
 */
#define TIDS		262144
#define TID_PROBES	64
#define STALE_S		30
struct tid_entry {
	uint64_t rest;		/* bits 0-47, + 1: 0 is a free slot */
	uint16_t high;
	time_t when;
};

static struct tid_entry tids[TIDS];

static void die(const char *what)
{
	fprintf(stderr, "umad_ibsim_wire: %s: %s\n", what, strerror(errno));
	exit(1);
}

static uint64_t get_be64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return be64toh(v);
}

static unsigned int tid_slot(uint64_t rest)
{
	/* Fibonacci hashing: the top bits of the product. */
	return (unsigned int)((rest * 0x9e3779b97f4a7c15ull) >> 46) % TIDS;
}

/*
 * Whether a MAD is an RMPP ACK, STOP or ABORT: the MAD layer sends those
 * of a response's receiver with the response's TID and the request's
 * method, and they are no request sent again.
 */
static bool rmpp_control(const uint8_t *mad)
{
	return mad[MAD_CLASS] != CLASS_SMP_LID && mad[MAD_CLASS] != CLASS_SMP_DR &&
	       (mad[RMPP_FLAGS] & RMPP_ACTIVE) && mad[RMPP_TYPE] != RMPP_TYPE_DATA;
}

static void tid_keep(const uint8_t *mad)
{
	uint64_t tid = get_be64(mad + MAD_TID);
	uint64_t rest = (tid & 0xffffffffffffull) + 1;
	unsigned int i, slot = tid_slot(rest), oldest = slot;
	time_t now = time(NULL);

	for (i = 0; i < TID_PROBES; i++) {
		struct tid_entry *e = &tids[(slot + i) % TIDS];

		if (e->rest == rest && now - e->when <= STALE_S && !rmpp_control(mad))
			n_resent++;
		if (!e->rest || e->rest == rest || now - e->when > STALE_S) {
			oldest = (slot + i) % TIDS;
			break;
		}
		if (e->when < tids[oldest].when)
			oldest = (slot + i) % TIDS;
	}
	tids[oldest] = (struct tid_entry){ rest, (uint16_t)(tid >> 48), now };
}

/* The TID the kernel sent, for ibsim's TID of a response; false if none. */
static bool tid_restore(uint64_t *tid)
{
	uint64_t rest = (*tid & 0xffffffffffffull) + 1;
	unsigned int i, slot = tid_slot(rest);

	for (i = 0; i < TID_PROBES; i++) {
		struct tid_entry *e = &tids[(slot + i) % TIDS];

		if (e->rest == rest) {
			*tid = (rest - 1) | (uint64_t)e->high << 48;
			return true;
		}
	}
	return false;
}

static void put_be64(uint8_t *p, uint64_t v)
{
	v = htobe64(v);
	memcpy(p, &v, sizeof(v));
}

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/*
 * The abstract socket address "<sockname>:<what><n>" as ibsim makes its
 * names: the address counts the name's NUL.
 */
static socklen_t sim_addr(struct sockaddr_un *sun, const char *what,
			  unsigned long n, bool numbered)
{
	size_t room = sizeof(sun->sun_path) - 1;
	int len;

	memset(sun, 0, sizeof(*sun));
	sun->sun_family = AF_UNIX;
	if (numbered)
		len = snprintf(sun->sun_path + 1, room, "%s:%s%lu", sockname,
			       what, n);
	else
		len = snprintf(sun->sun_path + 1, room, "%s:%s", sockname,
			       what);
	if (len < 0 || (size_t)len >= room) {
		errno = ENAMETOOLONG;
		die(sockname);
	}
	return offsetof(struct sockaddr_un, sun_path) + 1 + len + 1;
}

static int sim_socket(const char *what, unsigned long n)
{
	struct sockaddr_un sun;
	socklen_t len = sim_addr(&sun, what, n, true);
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		die("socket");
	if (bind(fd, (struct sockaddr *)&sun, len))
		die("bind");
	return fd;
}

static void sim_connect(int fd, const char *what, unsigned long n,
			bool numbered)
{
	struct sockaddr_un sun;
	socklen_t len = sim_addr(&sun, what, n, numbered);

	if (connect(fd, (struct sockaddr *)&sun, len))
		die("connecting to ibsim");
}

/* Takes what ibsim sent the client into its inbox, all there is. */
static void client_receive(struct client *c)
{
	for (;;) {
		struct sim_request *slot;
		ssize_t n;

		if (c->inbox_count == c->inbox_size) {
			size_t size = c->inbox_size ? 2 * c->inbox_size : 256;
			struct sim_request *inbox = calloc(size, sizeof(*inbox));
			size_t i;

			if (!inbox)
				die("the inbox");
			for (i = 0; i < c->inbox_count; i++)
				inbox[i] = c->inbox[(c->inbox_head + i) % c->inbox_size];
			free(c->inbox);
			c->inbox = inbox;
			c->inbox_head = 0;
			c->inbox_size = size;
		}
		slot = &c->inbox[(c->inbox_head + c->inbox_count) % c->inbox_size];
		n = recv(c->data, slot, sizeof(*slot), MSG_DONTWAIT);
		if (n < 0 && errno == EAGAIN)
			return;
		if (n != sizeof(*slot)) {
			errno = n < 0 ? errno : EPROTO;
			die("ibsim's data socket");
		}
		c->inbox_count++;
	}
}

/*
 * One control request and ibsim's answer, which every request has. ibsim
 * may be sending us MADs meanwhile: they go to the inbox.
 */
static void sim_ctl(struct client *c, uint32_t type, const void *data,
		    size_t len, struct sim_ctl *answer)
{
	struct sim_ctl msg = {
		.magic = SIM_MAGIC,
		.clientid = c->index,
		.type = type,
		.len = (uint32_t)len,
	};
	struct pollfd fds[2] = {
		{ .fd = c->ctl, .events = POLLIN },
		{ .fd = c->data, .events = POLLIN },
	};
	long long deadline = now_ms() + ANSWER_MS;

	if (len)
		memcpy(msg.data, data, len);
	if (send(c->ctl, &msg, sizeof(msg), 0) != sizeof(msg))
		die("ibsim's control socket");
	while (!(fds[0].revents & POLLIN)) {
		int left = (int)(deadline - now_ms());

		if (left <= 0 || poll(fds, 2, left) == 0) {
			errno = ETIMEDOUT;
			die("ibsim does not answer");
		}
		if (fds[1].revents)
			client_receive(c);
	}
	if (recv(c->ctl, &msg, sizeof(msg), 0) != sizeof(msg))
		die("ibsim's control socket");
	if (msg.type == SIM_CTL_ERROR) {
		errno = EPROTO;
		die(c->node);
	}
	if (answer)
		*answer = msg;
}

/*
 * Attaches the client to its node as the node's SM client, the one ibsim
 * gives requests: ibsim's data socket for it answers ours from then on.
 * (Attached again, it may get another index: the responses still on
 * their way to the old one are lost, and time out.)
 */
static void sim_attach(struct client *c)
{
	struct sim_client_info info = { .id = (uint32_t)c->id, .issm = 1 };
	struct sim_ctl answer;

	memcpy(info.nodeid, c->node, sizeof(info.nodeid));
	c->index = 0;
	sim_ctl(c, SIM_CTL_CONNECT, &info, sizeof(info), &answer);
	memcpy(&info, answer.data, sizeof(info));
	c->index = info.id;
	sim_connect(c->data, "out", c->index, true);
	printf("umad_ibsim_wire: iblo%u attached to %s as ibsim's client %u\n",
	       c->dev, c->node, c->index);
	fflush(stdout);
}

/* The node ibsim attached is the device's: the SM finds itself by GUID. */
static void check_guid(struct client *c)
{
	struct sim_ctl answer;
	char path[128], text[32];
	uint64_t sim_guid, guid = 0;
	unsigned int a, b, d, e;
	FILE *f;

	sim_ctl(c, SIM_CTL_GET_GUID, NULL, 0, &answer);
	memcpy(&sim_guid, answer.data, sizeof(sim_guid));	/* host order */
	snprintf(path, sizeof(path), SYSFS_IB "/iblo%u/node_guid", c->dev);
	f = fopen(path, "r");
	if (!f || !fgets(text, sizeof(text), f) ||
	    sscanf(text, "%x:%x:%x:%x", &a, &b, &d, &e) != 4)
		die(path);
	fclose(f);
	guid = (uint64_t)a << 48 | (uint64_t)b << 32 | (uint64_t)d << 16 | e;
	if (guid != sim_guid) {
		fprintf(stderr,
			"umad_ibsim_wire: iblo%u's node GUID is %#llx, %s's %#llx: the SM would not find its own port\n",
			c->dev, (unsigned long long)guid, c->node,
			(unsigned long long)sim_guid);
		exit(1);
	}
}

static void wire_write(const struct lo_wire_msg *msg)
{
	if (write(wire, msg, sizeof(*msg)) == sizeof(*msg))
		return;
	/* A device removed while its messages were on their way. */
	if (errno == ENODEV)
		return;
	die("writing the wire");
}

/*
 * Asks ibsim for the port's PortInfo; passes it on when it changed, or
 * when a ClientReregister is owed the kernel.
 */
static void port_info_refresh(struct client *c)
{
	struct lo_wire_msg msg = {
		.type = LO_WIRE_PORT_INFO,
		.dev = (uint16_t)c->dev,
		.port = 1,
		.len = PORT_INFO_LEN,
	};
	struct sim_ctl answer;
	uint8_t attached = 0;

	sim_ctl(c, SIM_CTL_GET_PORTINFO, &attached, sizeof(attached), &answer);
	if (c->port_info_known && !c->rereg &&
	    !memcmp(c->port_info, answer.data, PORT_INFO_LEN))
		return;
	memcpy(c->port_info, answer.data, PORT_INFO_LEN);
	c->port_info_known = true;
	memcpy(msg.data, answer.data, PORT_INFO_LEN);
	if (c->rereg)
		msg.data[PI_REREG] |= CLIENT_REREG;
	c->rereg = false;
	wire_write(&msg);
}

/*
 * IsSM as the kernel's capability mask has it (an issmN open sets it). On
 * ibsim, clearing it also stops the requests a node's SM client gets:
 * attach again, as the node's SM client without the bit.
 */
static void issm_set(struct client *c, enum issm issm)
{
	int value = issm;

	if (issm == c->issm)
		return;
	sim_ctl(c, SIM_CTL_SET_ISSM, &value, sizeof(value), NULL);
	c->issm = issm;
	if (issm == ISSM_OFF) {
		sim_ctl(c, SIM_CTL_DISCONNECT, NULL, 0, NULL);
		sim_attach(c);
	}
}

static struct client *client_of(unsigned int dev)
{
	unsigned int i;

	for (i = 0; i < nclients; i++)
		if (clients[i].dev == dev)
			return &clients[i];
	return NULL;
}

static bool backlog_full(void)
{
	unsigned int i;

	for (i = 0; i < nclients; i++)
		if (clients[i].backlog_count == BACKLOG)
			return true;
	return false;
}

/* Sends ibsim what waits in the client's backlog, as far as it takes it. */
static void backlog_flush(struct client *c)
{
	while (c->backlog_count) {
		struct sim_request *req = &c->backlog[c->backlog_head];

		if (send(c->data, req, sizeof(*req), MSG_DONTWAIT) != sizeof(*req)) {
			if (errno == EAGAIN)
				return;
			die("sending to ibsim");
		}
		c->backlog_head = (c->backlog_head + 1) % BACKLOG;
		c->backlog_count--;
	}
}

static bool is_own_port_info(const uint8_t *mad)
{
	return mad[MAD_CLASS] == CLASS_SMP_DR && !mad[SMP_HOP_CNT] &&
	       (mad[MAD_ATTR_ID] << 8 | mad[MAD_ATTR_ID + 1]) == ATTR_PORT_INFO;
}

/* A MAD the kernel sent, to ibsim. */
static void to_ibsim(struct client *c, const struct lo_wire_msg *msg)
{
	struct sim_request *req;
	uint8_t *mad;

	req = &c->backlog[(c->backlog_head + c->backlog_count) % BACKLOG];
	*req = (struct sim_request){
		.dlid = htons(msg->dlid),
		.dqp = htonl(msg->dqpn),
		.sqp = htonl(msg->sqpn),
		.length = htobe64(msg->len),
	};
	mad = req->mad;
	memcpy(mad, msg->data, msg->len);
	if (!(mad[MAD_METHOD] & METHOD_RESP))
		tid_keep(mad);
	if (mad[MAD_CLASS] == CLASS_SMP_DR) {
		/* As the SM built it: ibsim routes it from the first hop. */
		mad[SMP_HOP_PTR] = 0;
		req->dlid = htons(0xffff);
		req->slid = htons(0xffff);
		if (is_own_port_info(mad) && mad[MAD_METHOD] == METHOD_SET &&
		    (mad[SMP_DATA + PI_REREG] & CLIENT_REREG))
			c->rereg = true;
	}
	/* Else slid 0: ibsim gives the port's LID, as umad2sim asks. */
	c->backlog_count++;
	n_out++;
	backlog_flush(c);
}

/* A MAD from ibsim, to the kernel. */
static void from_ibsim(struct client *c, struct sim_request *req)
{
	struct lo_wire_msg msg = {
		.type = LO_WIRE_MAD,
		.dev = (uint16_t)c->dev,
		.port = 1,
		.dlid = ntohs((uint16_t)req->dlid),
		.slid = ntohs((uint16_t)req->slid),
		.dqpn = ntohl(req->dqp),
		.sqpn = ntohl(req->sqp),
		.pkey = DEFAULT_PKEY,
		.len = sizeof(req->mad),
	};
	uint8_t *mad = req->mad;
	bool response = mad[MAD_METHOD] & METHOD_RESP;
	uint64_t tid = get_be64(mad + MAD_TID);

	if (ntohl(req->status) == STATUS_BOUNCED) {
		n_bounced++;
		return;
	}
	/*
	 * What the port cannot take: another client's QP (the wire carries
	 * QP0 and QP1), and a directed-route request (see the top).
	 */
	if (msg.dqpn > 1 || msg.sqpn > 1 || !msg.dqpn != !msg.sqpn ||
	    (mad[MAD_CLASS] == CLASS_SMP_DR && !response)) {
		n_dropped++;
		return;
	}
	msg.qkey = msg.dqpn ? QP1_QKEY : 0;
	if (response) {
		if (!tid_restore(&tid))
			n_unmatched++;
		put_be64(mad + MAD_TID, tid);
	}
	/* An answer about the port itself: the port first. */
	if (response && is_own_port_info(mad))
		port_info_refresh(c);
	memcpy(msg.data, mad, sizeof(req->mad));
	wire_write(&msg);
	n_in++;
}

/* What the wire has for us, a batch of it while no backlog is full. */
static void wire_drain(void)
{
	struct lo_wire_msg msg;
	struct client *c;
	uint32_t cap;
	unsigned int i;
	ssize_t n;

	for (i = 0; i < BATCH && !backlog_full(); i++) {
		n = read(wire, &msg, sizeof(msg));
		if (n < 0 && errno == EAGAIN)
			return;
		if (n != sizeof(msg)) {
			errno = n < 0 ? errno : EPROTO;
			die("reading the wire");
		}
		c = client_of(msg.dev);
		if (!c)
			continue;
		switch (msg.type) {
		case LO_WIRE_MAD:
			to_ibsim(c, &msg);
			break;
		case LO_WIRE_CAP_MASK:
			/* The wire opened, or the device came (again). */
			memcpy(&cap, msg.data, sizeof(cap));
			issm_set(c, ntohl(cap) & CAP_IS_SM ? ISSM_ON : ISSM_OFF);
			c->told = true;
			c->port_info_known = false;
			port_info_refresh(c);
			break;
		}
	}
}

/* What ibsim sent the client, a batch of it. */
static void client_drain(struct client *c)
{
	unsigned int i;

	client_receive(c);
	for (i = 0; i < BATCH && c->inbox_count; i++) {
		struct sim_request req = c->inbox[c->inbox_head];

		c->inbox_head = (c->inbox_head + 1) % c->inbox_size;
		c->inbox_count--;
		from_ibsim(c, &req);
	}
}

static void bad_arguments(void)
{
	fprintf(stderr, "usage: umad_ibsim_wire IBDEV=NODE... (at most %d)\n",
		MAX_CLIENTS);
	exit(2);
}

int main(int argc, char **argv)
{
	struct pollfd fds[2 + MAX_CLIENTS];
	long long refreshed = 0, told_by;
	unsigned int i;
	sigset_t stop;
	int n;

	if (argc < 2 || argc - 1 > MAX_CLIENTS)
		bad_arguments();
	if (getenv("IBSIM_SOCKNAME"))
		sockname = getenv("IBSIM_SOCKNAME");
	for (i = 0; i + 1 < (unsigned int)argc; i++) {
		struct client *c = &clients[i];
		const char *arg = argv[i + 1];
		int end = 0;

		if (sscanf(arg, "iblo%u=%n", &c->dev, &end) != 1 || !end ||
		    strlen(arg + end) >= sizeof(c->node) || !arg[end])
			bad_arguments();
		snprintf(c->node, sizeof(c->node), "%s", arg + end);
		c->id = (unsigned long)getpid() << 4 | i;
		c->issm = ISSM_UNKNOWN;
		c->ctl = sim_socket("ctl", c->id);
		sim_connect(c->ctl, "ctl", 0, false);
		c->data = sim_socket("in", c->id);
		sim_attach(c);
		check_guid(c);
		nclients++;
	}
	/* SIGTERM and SIGINT end the loop, as a message on a descriptor. */
	sigemptyset(&stop);
	sigaddset(&stop, SIGTERM);
	sigaddset(&stop, SIGINT);
	if (sigprocmask(SIG_BLOCK, &stop, NULL))
		die("sigprocmask");
	fds[0] = (struct pollfd){ .fd = signalfd(-1, &stop, SFD_CLOEXEC),
				  .events = POLLIN };
	if (fds[0].fd < 0)
		die("signalfd");
	/* Opening it tells us each wired port's capability mask. */
	wire = open(WIRE, O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (wire < 0)
		die(WIRE);
	told_by = now_ms() + ANSWER_MS;
	while (!fds[0].revents) {
		fds[1] = (struct pollfd){
			.fd = wire,
			.events = backlog_full() ? 0 : POLLIN,
		};
		for (i = 0; i < nclients; i++)
			fds[2 + i] = (struct pollfd){
				.fd = clients[i].data,
				.events = POLLIN |
					  (clients[i].backlog_count ? POLLOUT : 0),
			};
		n = poll(fds, 2 + nclients, POLL_MS);
		if (n < 0 && errno != EINTR)
			die("poll");
		for (i = 0; n > 0 && i < nclients; i++) {
			if (fds[2 + i].revents & POLLOUT)
				backlog_flush(&clients[i]);
			if (fds[2 + i].revents & ~POLLOUT)
				client_drain(&clients[i]);
		}
		if (n > 0 && fds[1].revents)
			wire_drain();
		/* MADs the inbox took while we waited for an answer. */
		for (i = 0; i < nclients; i++)
			if (clients[i].inbox_count)
				client_drain(&clients[i]);
		if (now_ms() - refreshed >= POLL_MS) {
			for (i = 0; i < nclients; i++)
				port_info_refresh(&clients[i]);
			refreshed = now_ms();
		}
		for (i = 0; told_by && i < nclients; i++) {
			if (clients[i].told)
				continue;
			if (now_ms() < told_by)
				break;
			fprintf(stderr, "umad_ibsim_wire: iblo%u is not a wired device\n",
				clients[i].dev);
			exit(1);
		}
		if (i == nclients)
			told_by = 0;
	}
	/* Detached, the node is no SM's: DISCONNECT leaves IsSM as it is. */
	for (i = 0; i < nclients; i++) {
		int off = ISSM_OFF;

		if (clients[i].issm != ISSM_OFF)
			sim_ctl(&clients[i], SIM_CTL_SET_ISSM, &off, sizeof(off), NULL);
		sim_ctl(&clients[i], SIM_CTL_DISCONNECT, NULL, 0, NULL);
	}
	printf("umad_ibsim_wire: out %llu in %llu resent %llu bounced %llu",
	       n_out, n_in, n_resent, n_bounced);
	printf(" unmatched %llu dropped %llu\n", n_unmatched, n_dropped);
	return 0;
}
