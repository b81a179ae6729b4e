/* engine/net: port checks by binding, listeners, interfaces, default address. */
#include <string.h>
#include <unistd.h>

#include "net.h"
#include "t.h"

static void test_port_free_and_held(void)
{
	ma_err e;
	int port = 0;
	int fd = ma_net_listen("127.0.0.1", 0, &port, &e);
	CHECK(fd >= 0, "listen: %s", e.msg);
	CHECK(port > 0, "bound port %d", port);
	CHECK(ma_net_port_free("127.0.0.1", port, &e) == 0, "a held port is in use");
	close(fd);
	CHECK(ma_net_port_free("127.0.0.1", port, &e) == 1, "a released port is free: %s", e.msg);
}

static void test_bad_address(void)
{
	ma_err e;
	CHECK(ma_net_port_free("not-an-ip", 80, &e) == -1, "bad ip");
	CHECK(strstr(e.msg, "not an IP address") != NULL, "%s", e.msg);
	CHECK(ma_net_port_free("127.0.0.1", 70000, &e) == -1, "bad port");
	/* an address that is not on this host: EADDRNOTAVAIL, an error (not "in use") */
	CHECK(ma_net_port_free("192.0.2.77", 6443, &e) == -1, "foreign address");
}

static void test_interfaces(void)
{
	ma_err e;
	ma_net_addr a[64];
	int n = ma_net_interfaces(a, 64, &e);
	CHECK(n >= 1, "interfaces: %s", e.msg);
	int lo = 0;
	for (int i = 0; i < n; i++)
		if (a[i].loopback && strcmp(a[i].ip, "127.0.0.1") == 0)
			lo = 1;
	CHECK(lo, "loopback 127.0.0.1 listed");
}

static void test_default_ip(void)
{
	ma_err e;
	char ip[64];
	/* A host without a default route is legal (a bare namespace): then an error naming the fix. */
	if (ma_net_default_ip(ip, sizeof ip, &e) == 0)
		CHECK(ip[0] != '\0', "an address");
	else
		CHECK(strstr(e.msg, "advertiseAddress") != NULL, "%s", e.msg);
}

int main(void)
{
	RUN(test_port_free_and_held);
	RUN(test_bad_address);
	RUN(test_interfaces);
	RUN(test_default_ip);
	DONE();
}
