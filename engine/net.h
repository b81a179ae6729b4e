/* Host network facts for preflight and address detection: whether a TCP port can be bound on
 * an address, a listening socket (for tests and the lab), and the host's interface addresses. */
#ifndef MA_NET_H
#define MA_NET_H

#include <stddef.h>

#include "err.h"

/* 1 if a TCP socket can bind ip:port (SO_REUSEADDR, as a server would), 0 if the address is in
 * use (EADDRINUSE), -1 on another error (bad address, address not on this host, ...). */
int ma_net_port_free(const char *ip, int port, ma_err *e);

/* Opens a listening TCP socket on ip:port (port 0: any); returns the fd, or -1. *bound gets the
 * port actually bound when not NULL. */
int ma_net_listen(const char *ip, int port, int *bound, ma_err *e);

typedef struct ma_net_addr {
	char ifname[64];
	char ip[64];
	int family; /* 4 or 6 */
	int up, loopback;
} ma_net_addr;

/* Fills up to max addresses of the host's interfaces; returns how many, or -1. */
int ma_net_interfaces(ma_net_addr *out, int max, ma_err *e);

/* The source address the host would use to reach the default route (IPv4 first, then IPv6),
 * found with a connected UDP socket (no packet is sent). -1 if there is no default route. */
int ma_net_default_ip(char *out, size_t outlen, ma_err *e);

#endif
