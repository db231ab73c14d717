/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: the client's side of the handshake (net/dial.c), the
 * parse of the server's HELLO reply (region table, info blob), the shm
 * transport's mapping of the regions it names (net/shm.c), and then what
 * libarf does with the info blob: arf_proto_get_info and the superblock
 * check (meta/super.c).  A thread plays a hostile server on a UNIX socket:
 * it answers each connection with the fuzz input and, if asked, a number of
 * descriptors of a small memfd.
 *
 * Input: one byte of flags, one byte of descriptor count, then the reply
 * frame (24-byte header + body).  Flags patch the header so that the fuzzer
 * spends its time on the body: bit 0 sets len to the frame's size, bit 1
 * makes it a HELLO reply of the right version, bit 2 sets status OK, bit 3
 * passes descriptors, bit 4 gives the client a shared secret (so that a
 * first frame with a challenge gets a proof, and the reply that follows it
 * in the input is read as the second round).
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "arf_meta.h"
#include "arf_proto.h"
#include "net_int.h"

static char sock_path[108];
static int listen_fd = -1, region_fd = -1;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static const uint8_t *reply;  /* the current input's frame */
static size_t reply_len;
static int reply_nfds;
static pthread_cond_t served_cond = PTHREAD_COND_INITIALIZER;
static unsigned long served;  /* connections answered and closed */

static void serve_one(int fd)
{
	pthread_mutex_lock(&lock);
	const uint8_t *p = reply;
	size_t len = reply_len;
	int nfds = reply_nfds;
	pthread_mutex_unlock(&lock);

	int fds[ARF_NET_MAX_REGIONS];
	union {
		char buf[CMSG_SPACE(sizeof(int) * ARF_NET_MAX_REGIONS)];
		struct cmsghdr align;
	} cm;
	size_t off = 0;
	for (int first = 1; off < len || first; first = 0) {
		struct iovec v = { (void *)(p + off), len - off };
		struct msghdr m = { .msg_iov = &v, .msg_iovlen = 1 };
		if (first && nfds > 0) {
			for (int i = 0; i < nfds; i++)
				fds[i] = region_fd;
			memset(&cm, 0, sizeof(cm));
			m.msg_control = cm.buf;
			m.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
			struct cmsghdr *c = CMSG_FIRSTHDR(&m);
			c->cmsg_level = SOL_SOCKET;
			c->cmsg_type = SCM_RIGHTS;
			c->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
			memcpy(CMSG_DATA(c), fds, sizeof(int) * (size_t)nfds);
		}
		if (!v.iov_len) /* descriptors need at least one byte: none then */
			break;
		ssize_t n = sendmsg(fd, &m, MSG_NOSIGNAL);
		if (n <= 0)
			break; /* the client gave up (closed): fine */
		off += (size_t)n;
	}
	shutdown(fd, SHUT_WR); /* the client sees the end of the reply */
	char junk[4096];
	while (read(fd, junk, sizeof(junk)) > 0) /* its hello, until it closes */
		;
	close(fd);
	pthread_mutex_lock(&lock);
	served++;
	pthread_cond_broadcast(&served_cond);
	pthread_mutex_unlock(&lock);
}

static void *server(void *arg)
{
	(void)arg;
	for (;;) {
		int fd = accept(listen_fd, NULL, NULL);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			abort();
		}
		serve_one(fd);
	}
	return NULL;
}

static void cleanup(void)
{
	unlink(sock_path);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	snprintf(sock_path, sizeof(sock_path), "fuzz-handshake.%d.sock", (int)getpid());
	unlink(sock_path);
	memcpy(sa.sun_path, sock_path, strlen(sock_path) + 1);
	listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (listen_fd < 0 || bind(listen_fd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    listen(listen_fd, 4)) {
		perror("fuzz_handshake: listen");
		exit(1);
	}
	atexit(cleanup);
	region_fd = memfd_create("fuzz-region", MFD_CLOEXEC);
	if (region_fd < 0 || ftruncate(region_fd, 65536)) {
		perror("fuzz_handshake: memfd");
		exit(1);
	}
	pthread_t t;
	if (pthread_create(&t, NULL, server, NULL))
		exit(1);
	pthread_detach(t);
	return 0;
}

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2)
		return 0;
	unsigned flags = data[0];
	int nfds = (flags & 8) ? data[1] % (ARF_NET_MAX_REGIONS + 1) : 0;
	size_t len = size - 2;
	uint8_t *frame = malloc(len ? len : 1);
	if (!frame)
		return 0;
	memcpy(frame, data + 2, len);
	if (len >= sizeof(struct arf_net_hdr)) {
		if (flags & 1)
			put32(frame, (uint32_t)len);
		if (flags & 2) {
			frame[4] = ARF_NET_OP_HELLO;
			frame[5] = 0;
			frame[6] = ARF_NET_F_REPLY;
			frame[7] = 0;
			put32(frame + 20, ARF_NET_PROTO_VERSION);
		}
		if (flags & 4)
			put32(frame + 16, ARF_NET_S_OK);
	}
	pthread_mutex_lock(&lock);
	reply = frame;
	reply_len = len;
	reply_nfds = nfds;
	unsigned long want = served + 1;
	pthread_mutex_unlock(&lock);

	static const uint8_t hello[] = "fuzz";
	static const uint8_t key[ARF_NET_AUTH_KEY_BYTES] = "a shared secret of 32 bytes.....";
	struct arf_net_client_opts o = {
		.transport = "shm",
		.sock_path = sock_path,
		.timeout_ms = 3000,
		.hello = hello,
		.hello_len = sizeof(hello),
		.auth_key = (flags & 16) ? key : NULL,
	};
	struct arf_net_conn *c = NULL;
	char err[256] = "";
	uint64_t t0 = now_ms();
	int rc = arf_net_connect(&o, &c, err, sizeof(err));
	if (rc == 0) {
		size_t n, ilen;
		const struct arf_net_region_info *r = arf_net_regions(c, &n);
		const void *info = arf_net_server_info(c, &ilen);
		if (n > ARF_NET_MAX_REGIONS || (n && !r) || !info || ilen > len)
			abort();
		/* what libarf's arf_open does with the blob */
		static struct arf_proto_info pi;
		static struct arf_meta_super sb;
		struct arf_proto_rd rd;
		arf_proto_rd_init(&rd, info, ilen);
		arf_proto_get_info(&rd, &pi);
		if (!rd.err && pi.version == ARF_PROTO_INFO_VERSION) {
			_Static_assert(sizeof(sb) <= sizeof(pi.super), "superblock fits the info blob");
			memcpy(&sb, pi.super, sizeof(sb));
			(void)arf_meta_super_check(&sb, err, sizeof(err));
		}
		arf_net_close(c);
	} else if (!strncmp(err, "shm: connect to", 15) || !strncmp(err, "shm: socket", 11)) {
		fprintf(stderr, "fuzz_handshake: cannot reach the test server: %s\n", err);
		abort();
	}
	/* The reply was complete and the socket half-closed: the client must
	 * never wait for its timeout (a status TIMEDOUT from the "server" is
	 * another matter, hence the clock). */
	if (now_ms() - t0 >= o.timeout_ms)
		abort();
	/* The client has closed; wait until the server thread is done with the
	 * input (it may still be sending when the client gave up early). */
	pthread_mutex_lock(&lock);
	while (served < want)
		pthread_cond_wait(&served_cond, &lock);
	reply = NULL;
	reply_len = 0;
	pthread_mutex_unlock(&lock);
	free(frame);
	return 0;
}
