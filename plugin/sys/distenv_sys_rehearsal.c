/* distenv_sys_rehearsal.c: the rehearsal's sockets (TCP, non-blocking
 * connects, one poll(2) loop bounded by the plan's timeout). */
#define _GNU_SOURCE /* accept4(2) */
#include "distenv_sys_rehearsal.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define RETRY_MS 20 /* after a refused connect: the peer may be late */
#define RING_RETRY_MS RETRY_MS /* the ring: another candidate */
#define LINE_WAIT_MS 200 /* an accepted peer's line */

/* One outgoing connection. */
struct conn {
	int fd;
	int reading; /* connected, waiting for the peer's line */
	long retry_at; /* ms: when to connect again (fd -1) */
	char buf[DISTENV_REHEARSAL_LINE_MAX];
	size_t used;
};

static long now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (long) t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static socklen_t to_sockaddr(const struct distenv_ip *ip, uint16_t port,
			     struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (ip->family == AF_INET6) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *) ss;

		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(port);
		memcpy(&s6->sin6_addr, ip->bytes, 16);
		return sizeof(*s6);
	}
	{
		struct sockaddr_in *s4 = (struct sockaddr_in *) ss;

		s4->sin_family = AF_INET;
		s4->sin_port = htons(port);
		memcpy(&s4->sin_addr, ip->bytes, 4);
		return sizeof(*s4);
	}
}

static void set_timeouts(int fd, int ms)
{
	struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

/* A non-blocking listener on every address of family (the wildcard,
 * as torch's TCPStore listens) at port; -1 with errno. */
static int listen_on(int family, uint16_t port)
{
	struct distenv_ip any;
	struct sockaddr_storage ss;
	socklen_t len;
	int fd, one = 1, e;

	memset(&any, 0, sizeof(any));
	any.family = family == AF_INET6 ? AF_INET6 : AF_INET;
	len = to_sockaddr(&any, port, &ss);
	fd = socket(any.family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *) &ss, len) == 0 &&
	    listen(fd, SOMAXCONN) == 0)
		return fd;
	e = errno;
	close(fd);
	errno = e;
	return -1;
}

/* Start a connect to ip:port from src (family 0: any); the fd, or -1
 * with errno when it failed at once. */
static int start_connect(const struct distenv_ip *ip, uint16_t port,
			 const struct distenv_ip *src)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int fd, e;

	fd = socket(ip->family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (src->family == ip->family) {
		len = to_sockaddr(src, 0, &ss);
		if (bind(fd, (struct sockaddr *) &ss, len) != 0)
			goto fail;
	}
	len = to_sockaddr(ip, port, &ss);
	if (connect(fd, (struct sockaddr *) &ss, len) == 0 ||
	    errno == EINPROGRESS)
		return fd;
fail:
	e = errno;
	close(fd);
	errno = e;
	return -1;
}

static void conn_close(struct conn *c, long retry_at)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	c->reading = 0;
	c->used = 0;
	c->retry_at = retry_at;
}

/* Read what is there into c->buf; 1 with a whole line (NUL-terminated
 * at its newline), 0 for more to come, -1 on EOF or error. */
static int conn_read_line(struct conn *c)
{
	ssize_t n =
		recv(c->fd, c->buf + c->used, sizeof(c->buf) - 1 - c->used, 0);
	char *nl;

	if (n <= 0)
		return n < 0 && (errno == EAGAIN || errno == EINTR) ? 0 : -1;
	c->used += (size_t) n;
	c->buf[c->used] = '\0';
	nl = strchr(c->buf, '\n');
	if (nl) {
		*nl = '\0';
		return 1;
	}
	return c->used + 1 >= sizeof(c->buf) ? -1 : 0;
}

/* A blocking line from an accepted fd, at most LINE_WAIT_MS. */
static int read_line(int fd, char *buf, size_t len)
{
	size_t used = 0;

	while (used + 1 < len) {
		ssize_t n = recv(fd, buf + used, len - 1 - used, 0);

		if (n <= 0)
			return -1;
		used += (size_t) n;
		buf[used] = '\0';
		if (strchr(buf, '\n'))
			return 0;
	}
	return -1;
}

static void send_line(int fd, const char *line)
{
	(void) !send(fd, line, strlen(line), MSG_NOSIGNAL);
}

/* The master: one node's check-in, answered. */
static void take_checkin(const struct distenv_rehearsal_plan *p, int lfd,
			 struct distenv_rehearsal_result *res)
{
	char line[DISTENV_REHEARSAL_LINE_MAX];
	uint32_t node;
	int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);

	if (fd < 0)
		return;
	set_timeouts(fd, LINE_WAIT_MS);
	if (read_line(fd, line, sizeof(line)) == 0 &&
	    distenv_rehearsal_line_parse(line, "checkin", p->job_id, p->step_id,
					 &node) == 0 &&
	    node < p->nnodes) {
		res->seen[node] = 1;
		distenv_rehearsal_line(line, sizeof(line), "ok", p->job_id,
				       p->step_id, p->node_id);
		send_line(fd, line);
	}
	close(fd);
}

/* This node's ring port: greet, then hear who it is. */
static void take_ring(const struct distenv_rehearsal_plan *p, int lfd,
		      struct distenv_rehearsal_result *res)
{
	char line[DISTENV_REHEARSAL_LINE_MAX];
	uint32_t node;
	int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);

	if (fd < 0)
		return;
	set_timeouts(fd, LINE_WAIT_MS);
	distenv_rehearsal_line(line, sizeof(line), "ring", p->job_id,
			       p->step_id, p->node_id);
	send_line(fd, line);
	if (read_line(fd, line, sizeof(line)) == 0 &&
	    distenv_rehearsal_line_parse(line, "ring", p->job_id, p->step_id,
					 &node) == 0 &&
	    node == p->prev_node_id)
		res->prev_ok = 1;
	close(fd);
}

/* A connect that finished (POLLOUT): 0 connected, else its errno. */
static int connect_result(int fd)
{
	int e = 0;
	socklen_t len = sizeof(e);

	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &len) != 0)
		return errno;
	return e;
}

struct loop {
	const struct distenv_rehearsal_plan *p;
	const struct distenv_rehearsal_peers *peers;
	struct distenv_rehearsal_result *res;
	struct conn cm, cn; /* to the master, to the next node */
	unsigned next_try; /* index into p->next_ports */
	unsigned attempt; /* connects to the neighbour so far */
	unsigned char foreign[DISTENV_REHEARSAL_RING_TRIES];
	int lr; /* ring listener */
};

static int all_seen(const struct loop *l)
{
	uint32_t i;

	for (i = 0; i < l->p->nnodes; i++)
		if (i != l->p->master_node_id && !l->res->seen[i])
			return 0;
	return 1;
}

static int done(const struct loop *l)
{
	const struct distenv_rehearsal_result *r = l->res;

	if (l->p->on_master ? !all_seen(l) : !r->master_ok)
		return 0;
	return r->next_ok && (r->prev_ok || l->lr < 0);
}

/* The neighbour's candidate to try next. It binds its first free one,
 * almost always the first: so every other try is the first, the others
 * in turn between, skipping those a foreign program answered. */
static void next_candidate(struct loop *l)
{
	unsigned i;

	for (i = 0; i < 2 * DISTENV_REHEARSAL_RING_TRIES; i++) {
		unsigned a = ++l->attempt, t;

		t = a % 2 ? 1 + (a / 2) % (DISTENV_REHEARSAL_RING_TRIES - 1) :
			    0;
		if (!l->foreign[t]) {
			l->next_try = t;
			return;
		}
	}
}

static void start_conns(struct loop *l, long now)
{
	const struct distenv_rehearsal_plan *p = l->p;
	struct distenv_rehearsal_result *r = l->res;

	if (!p->on_master && !r->master_ok && l->cm.fd < 0 &&
	    now >= l->cm.retry_at) {
		l->cm.fd = start_connect(&l->peers->master, p->master_port,
					 &l->peers->src);
		if (l->cm.fd < 0) {
			r->master_errno = errno;
			l->cm.retry_at = now + RETRY_MS;
		}
	}
	if (!r->next_ok && l->cn.fd < 0 && now >= l->cn.retry_at) {
		r->next_port = p->next_ports[l->next_try];
		l->cn.fd = start_connect(&l->peers->next, r->next_port,
					 &l->peers->src);
		if (l->cn.fd < 0) {
			r->next_errno = errno;
			l->cn.retry_at = now + RETRY_MS;
		}
	}
}

/* Progress on the connection to the master. */
static void step_master(struct loop *l, short ev, long now)
{
	const struct distenv_rehearsal_plan *p = l->p;
	struct distenv_rehearsal_result *r = l->res;
	char line[DISTENV_REHEARSAL_LINE_MAX];
	uint32_t node;
	int rc;

	if (!l->cm.reading) {
		int e = connect_result(l->cm.fd);

		if (e) {
			r->master_errno = e;
			conn_close(&l->cm, now + RETRY_MS);
			return;
		}
		distenv_rehearsal_line(line, sizeof(line), "checkin", p->job_id,
				       p->step_id, p->node_id);
		send_line(l->cm.fd, line);
		l->cm.reading = 1;
		return;
	}
	(void) ev;
	rc = conn_read_line(&l->cm);
	if (rc == 0)
		return;
	if (rc == 1 && distenv_rehearsal_line_parse(l->cm.buf, "ok", p->job_id,
						    p->step_id, &node) == 0) {
		r->master_ok = 1;
		r->master_errno = 0;
		conn_close(&l->cm, 0);
		return;
	}
	r->master_foreign = 1;
	conn_close(&l->cm, now + RETRY_MS);
}

/* Progress on the connection to the ring neighbour. */
static void step_next(struct loop *l, long now)
{
	const struct distenv_rehearsal_plan *p = l->p;
	struct distenv_rehearsal_result *r = l->res;
	char line[DISTENV_REHEARSAL_LINE_MAX];
	uint32_t node;
	int rc;

	if (!l->cn.reading) {
		int e = connect_result(l->cn.fd);

		if (e) {
			r->next_errno = e;
			conn_close(&l->cn, now + RING_RETRY_MS);
			/* refused: the neighbour may listen on another
			 * candidate (its first was taken) */
			if (e == ECONNREFUSED)
				next_candidate(l);
			return;
		}
		l->cn.reading = 1;
		return;
	}
	rc = conn_read_line(&l->cn);
	if (rc == 0)
		return;
	if (rc == 1 &&
	    distenv_rehearsal_line_parse(l->cn.buf, "ring", p->job_id,
					 p->step_id, &node) == 0 &&
	    node == p->next_node_id) {
		distenv_rehearsal_line(line, sizeof(line), "ring", p->job_id,
				       p->step_id, p->node_id);
		send_line(l->cn.fd, line);
		r->next_ok = 1;
		r->next_errno = 0;
		r->next_foreign = 0;
		conn_close(&l->cn, 0);
		return;
	}
	r->next_foreign = 1;
	l->foreign[l->next_try] = 1;
	next_candidate(l);
	conn_close(&l->cn, now);
}

/* What a connection still under way at the deadline means. */
static void at_deadline(struct conn *c, int *errnum)
{
	if (c->fd >= 0)
		*errnum = c->reading ? ETIMEDOUT : EINPROGRESS;
	conn_close(c, 0);
}

void distenv_sys_rehearse(const struct distenv_rehearsal_plan *p,
			  const struct distenv_rehearsal_peers *peers,
			  struct distenv_rehearsal_result *res)
{
	struct loop l;
	long start = now_ms(), deadline = start + p->timeout_ms, now;
	int lm = -1, family = peers->next.family;
	unsigned t;

	memset(&l, 0, sizeof(l));
	l.p = p;
	l.peers = peers;
	l.res = res;
	l.cm.fd = l.cn.fd = l.lr = -1;
	if (p->on_master) {
		lm = listen_on(family, p->master_port);
		if (lm < 0) {
			res->listen_errno = errno;
			res->listen_port = p->master_port;
		}
	}
	for (t = 0; t < DISTENV_REHEARSAL_RING_TRIES && l.lr < 0; t++)
		l.lr = listen_on(family, p->ring_ports[t]);
	if (l.lr < 0 && !res->listen_errno) {
		res->listen_errno = errno;
		res->listen_ring = 1;
		res->listen_port = p->ring_ports[0];
	}
	for (now = start; now < deadline && !done(&l); now = now_ms()) {
		struct pollfd fds[4];
		int n = 0, im = -1, ir = -1, icm = -1, icn = -1, wait;

		start_conns(&l, now);
		if (lm >= 0) {
			fds[n] = (struct pollfd){ lm, POLLIN, 0 };
			im = n++;
		}
		if (l.lr >= 0) {
			fds[n] = (struct pollfd){ l.lr, POLLIN, 0 };
			ir = n++;
		}
		if (l.cm.fd >= 0) {
			fds[n] = (struct pollfd){
				l.cm.fd, l.cm.reading ? POLLIN : POLLOUT, 0
			};
			icm = n++;
		}
		if (l.cn.fd >= 0) {
			fds[n] = (struct pollfd){
				l.cn.fd, l.cn.reading ? POLLIN : POLLOUT, 0
			};
			icn = n++;
		}
		wait = (int) (deadline - now);
		if (wait > RING_RETRY_MS)
			wait = RING_RETRY_MS;
		if (poll(fds, (nfds_t) n, wait) <= 0)
			continue;
		now = now_ms();
		if (im >= 0 && fds[im].revents)
			take_checkin(p, lm, res);
		if (ir >= 0 && fds[ir].revents)
			take_ring(p, l.lr, res);
		if (icm >= 0 && fds[icm].revents)
			step_master(&l, fds[icm].revents, now);
		if (icn >= 0 && fds[icn].revents)
			step_next(&l, now);
	}
	at_deadline(&l.cm, &res->master_errno);
	at_deadline(&l.cn, &res->next_errno);
	if (lm >= 0)
		close(lm);
	if (l.lr >= 0)
		close(l.lr);
	res->waited_ms = (int) (now_ms() - start);
}
