/* libFuzzer: etcd v3 gateway answers as engine/etcd.c reads them (member list/add/promote/remove,
 * maintenance status, /health), with the HTTP status they came with. Input: one byte choosing the
 * status (200, 400, 404, 500, 503), one byte choosing the reader, then the body. An answer of the
 * wrong shape must fail with a message, never read as an empty result: a member list that parses
 * has at least one member, each with a peer URL. */
#include <stdlib.h>
#include "etcd.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	static const long statuses[] = {200, 400, 404, 500, 503};
	if (size < 2)
		return 0;
	long status = statuses[data[0] % 5];
	int which = data[1] % 3;
	const char *body = (const char *)data + 2;
	size_t len = size - 2;
	ma_err e = {0};
	const char *ep = "https://127.0.0.1:2379";
	if (which == 0) {
		ma_etcd_members m;
		if (ma_etcd_members_parse(body, len, status, ep, &m, &e) == 0) {
			if (m.n == 0)
				abort(); /* the defect of issue 18: an answer read as a cluster without members */
			for (size_t i = 0; i < m.n; i++)
				if (m.v[i].n_peer_urls == 0 || !m.v[i].name)
					abort();
		} else if (!e.msg[0]) {
			abort(); /* every error carries a message */
		}
		ma_etcd_members_free(&m);
	} else if (which == 1) {
		ma_etcd_status st;
		if (ma_etcd_status_parse(body, len, status, ep, &st, &e) == 0) {
			if (!st.version || !st.version[0])
				abort();
		} else if (!e.msg[0]) {
			abort();
		}
		ma_etcd_status_free(&st);
	} else {
		ma_etcd_health h;
		if (ma_etcd_health_parse(body, len, status, ep, &h, &e) < 0 && !e.msg[0])
			abort();
		ma_etcd_health_free(&h);
	}
	return 0;
}
