/* SPDX-License-Identifier: GPL-2.0 */
/*
 * RDMA netlink (NETLINK_RDMA, the nldev client) as the `rdma` tool speaks
 * it: a request's attributes, a device's index by name, and a rename.
 */
#ifndef UMAD_NL_H
#define UMAD_NL_H

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <linux/netlink.h>
#include <rdma/rdma_netlink.h>
#include <sys/socket.h>

/* Bytes in a message buffer: uint32_t words, aligned for the headers. */
#define NL_BUF 8192

static inline int nl_open(void)
{
	struct sockaddr_nl addr = { .nl_family = AF_NETLINK };
	int fd;

	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_RDMA);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&addr, sizeof(addr))) {
		close(fd);
		return -errno;
	}
	return fd;
}

static inline void nl_put(struct nlmsghdr *nlh, int type, const void *data, int len)
{
	struct nlattr *attr = (void *)nlh + NLMSG_ALIGN(nlh->nlmsg_len);

	attr->nla_type = type;
	attr->nla_len = NLA_HDRLEN + len;
	memcpy((char *)attr + NLA_HDRLEN, data, len);
	nlh->nlmsg_len = NLMSG_ALIGN(nlh->nlmsg_len) + NLA_ALIGN(attr->nla_len);
}

/* Calls fn on each attribute of a reply message. */
static inline void nl_attrs(struct nlmsghdr *nlh, void (*fn)(struct nlattr *, void *),
			    void *arg)
{
	int left = nlh->nlmsg_len - NLMSG_HDRLEN;
	struct nlattr *attr = NLMSG_DATA(nlh);

	while (left >= NLA_HDRLEN && attr->nla_len >= NLA_HDRLEN &&
	       attr->nla_len <= left) {
		fn(attr, arg);
		left -= NLA_ALIGN(attr->nla_len);
		attr = (void *)attr + NLA_ALIGN(attr->nla_len);
	}
}

struct dev_lookup {
	const char *name;
	int index;
	uint32_t cur_index;
};

static inline void dev_attr(struct nlattr *attr, void *arg)
{
	struct dev_lookup *l = arg;
	void *data = (char *)attr + NLA_HDRLEN;

	if (attr->nla_type == RDMA_NLDEV_ATTR_DEV_INDEX)
		memcpy(&l->cur_index, data, sizeof(l->cur_index));
	else if (attr->nla_type == RDMA_NLDEV_ATTR_DEV_NAME &&
		 !strcmp(data, l->name))
		l->index = l->cur_index;
}

/* The IB device index of name, from an RDMA_NLDEV_CMD_GET dump; -errno. */
static inline int dev_index(int fd, const char *name)
{
	struct dev_lookup l = { .name = name, .index = -ENODEV };
	uint32_t buf[NL_BUF / 4];
	struct nlmsghdr *nlh = (void *)buf;
	ssize_t len;

	memset(buf, 0, sizeof(buf));
	nlh->nlmsg_len = NLMSG_HDRLEN;
	nlh->nlmsg_type = RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_GET);
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
	if (send(fd, buf, nlh->nlmsg_len, 0) < 0)
		return -errno;
	for (;;) {
		len = recv(fd, buf, sizeof(buf), 0);
		if (len < 0)
			return -errno;
		for (nlh = (void *)buf; NLMSG_OK(nlh, len); nlh = NLMSG_NEXT(nlh, len)) {
			if (nlh->nlmsg_type == NLMSG_DONE)
				return l.index;
			if (nlh->nlmsg_type == NLMSG_ERROR)
				return ((struct nlmsgerr *)NLMSG_DATA(nlh))->error;
			nl_attrs(nlh, dev_attr, &l);
		}
	}
}

/* Waits for the kernel's answer to a request sent with NLM_F_ACK; 0 or -errno. */
static inline int nl_ack(int fd)
{
	uint32_t buf[NL_BUF / 4];
	struct nlmsghdr *nlh;
	ssize_t len;

	for (;;) {
		len = recv(fd, buf, sizeof(buf), 0);
		if (len < 0)
			return -errno;
		for (nlh = (void *)buf; NLMSG_OK(nlh, len); nlh = NLMSG_NEXT(nlh, len))
			if (nlh->nlmsg_type == NLMSG_ERROR)
				return ((struct nlmsgerr *)NLMSG_DATA(nlh))->error;
	}
}

/* Renames IB device index to name (`rdma dev set ... name`); 0 or -errno. */
static inline int nl_rename(int fd, uint32_t index, const char *name)
{
	uint32_t buf[NL_BUF / 4];
	struct nlmsghdr *nlh = (void *)buf;

	memset(buf, 0, sizeof(buf));
	nlh->nlmsg_len = NLMSG_HDRLEN;
	nlh->nlmsg_type = RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_SET);
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
	nl_put(nlh, RDMA_NLDEV_ATTR_DEV_INDEX, &index, sizeof(index));
	nl_put(nlh, RDMA_NLDEV_ATTR_DEV_NAME, name, strlen(name) + 1);
	if (send(fd, buf, nlh->nlmsg_len, 0) < 0)
		return -errno;
	return nl_ack(fd);
}

#endif
