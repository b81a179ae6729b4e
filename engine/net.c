/* See net.h. */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "net.h"

static int sockaddr_of(const char *ip, int port, struct sockaddr_storage *ss, socklen_t *len, ma_err *e)
{
	memset(ss, 0, sizeof *ss);
	if (port < 0 || port > 65535)
		return ma_fail(e, "port %d out of range", port);
	struct sockaddr_in *a4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)ss;
	if (inet_pton(AF_INET, ip, &a4->sin_addr) == 1) {
		a4->sin_family = AF_INET;
		a4->sin_port = htons((unsigned short)port);
		*len = sizeof *a4;
		return 0;
	}
	if (inet_pton(AF_INET6, ip, &a6->sin6_addr) == 1) {
		a6->sin6_family = AF_INET6;
		a6->sin6_port = htons((unsigned short)port);
		*len = sizeof *a6;
		return 0;
	}
	return ma_fail(e, "%s is not an IP address", ip);
}

static int bind_socket(const char *ip, int port, struct sockaddr_storage *ss, ma_err *e, int *err_out)
{
	socklen_t len;
	*err_out = 0;
	if (sockaddr_of(ip, port, ss, &len, e))
		return -1;
	int fd = socket(ss->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return ma_fail_errno(e, errno, "socket for %s", ip);
	int one = 1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (ss->ss_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
	if (bind(fd, (struct sockaddr *)ss, len) < 0) {
		*err_out = errno;
		close(fd);
		return -1;
	}
	return fd;
}

int ma_net_port_free(const char *ip, int port, ma_err *e)
{
	struct sockaddr_storage ss;
	int err;
	int fd = bind_socket(ip, port, &ss, e, &err);
	if (fd >= 0) {
		close(fd);
		return 1;
	}
	if (err == EADDRINUSE)
		return 0;
	if (err == 0)
		return -1; /* bad address, already reported */
	return ma_fail_errno(e, err, "binding %s port %d", ip, port);
}

int ma_net_listen(const char *ip, int port, int *bound, ma_err *e)
{
	struct sockaddr_storage ss;
	int err;
	int fd = bind_socket(ip, port, &ss, e, &err);
	if (fd < 0) {
		if (err)
			ma_fail_errno(e, err, "binding %s port %d", ip, port);
		return -1;
	}
	if (listen(fd, 16) < 0) {
		err = errno;
		close(fd);
		return ma_fail_errno(e, err, "listening on %s port %d", ip, port);
	}
	if (bound) {
		socklen_t len = sizeof ss;
		getsockname(fd, (struct sockaddr *)&ss, &len);
		*bound = ss.ss_family == AF_INET ? ntohs(((struct sockaddr_in *)&ss)->sin_port)
						 : ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
	}
	return fd;
}

int ma_net_interfaces(ma_net_addr *out, int max, ma_err *e)
{
	struct ifaddrs *ifs, *i;
	if (getifaddrs(&ifs) < 0)
		return ma_fail_errno(e, errno, "getifaddrs");
	int n = 0;
	for (i = ifs; i && n < max; i = i->ifa_next) {
		if (!i->ifa_addr)
			continue;
		int fam = i->ifa_addr->sa_family;
		if (fam != AF_INET && fam != AF_INET6)
			continue;
		ma_net_addr *a = &out[n];
		memset(a, 0, sizeof *a);
		snprintf(a->ifname, sizeof a->ifname, "%s", i->ifa_name);
		const void *src = fam == AF_INET ? (const void *)&((struct sockaddr_in *)i->ifa_addr)->sin_addr
						 : (const void *)&((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr;
		if (!inet_ntop(fam, src, a->ip, sizeof a->ip))
			continue;
		a->family = fam == AF_INET ? 4 : 6;
		a->up = (i->ifa_flags & IFF_UP) != 0;
		a->loopback = (i->ifa_flags & IFF_LOOPBACK) != 0;
		n++;
	}
	freeifaddrs(ifs);
	return n;
}

static int route_source(int fam, const char *dst, char *out, size_t outlen)
{
	struct sockaddr_storage ss;
	socklen_t len;
	ma_err ignore;
	if (sockaddr_of(dst, 53, &ss, &len, &ignore))
		return -1;
	int fd = socket(fam, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	int rc = -1;
	if (connect(fd, (struct sockaddr *)&ss, len) == 0) {
		len = sizeof ss;
		if (getsockname(fd, (struct sockaddr *)&ss, &len) == 0) {
			const void *src = fam == AF_INET ? (const void *)&((struct sockaddr_in *)&ss)->sin_addr
							 : (const void *)&((struct sockaddr_in6 *)&ss)->sin6_addr;
			if (inet_ntop(fam, src, out, (socklen_t)outlen))
				rc = 0;
		}
	}
	close(fd);
	return rc;
}

int ma_net_default_ip(char *out, size_t outlen, ma_err *e)
{
	/* Documentation-range destinations: connect() on UDP only picks a route, sends nothing. */
	if (route_source(AF_INET, "192.0.2.1", out, outlen) == 0)
		return 0;
	if (route_source(AF_INET6, "2001:db8::1", out, outlen) == 0)
		return 0;
	return ma_fail(e, "no default route: cannot pick an address to advertise; set localAPIEndpoint.advertiseAddress");
}
