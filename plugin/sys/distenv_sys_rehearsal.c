/* distenv_sys_rehearsal.c: the rehearsal's sockets (TCP, non-blocking
 * connects, one ppoll(2) loop bounded by the plan's timeout). */
#define _GNU_SOURCE /* accept4(2), ppoll(2) */
#include "distenv_sys_rehearsal.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* Times are in microseconds (CLOCK_MONOTONIC). A refused connect is
 * retried every RETRY_FAST_US for RETRY_FAST times (5 ms), then after
 * twice as long each time, 16 ms at most: the step's nodes start their
 * tasks within milliseconds of each other, so a peer refusing at first
 * is almost always about to listen, and the rehearsal's cost is the
 * wait for the retry after it does; a peer that stays late (a slow
 * node) gets ever fewer connects, so that the nodes of a large step
 * waiting on a late master send it one connect each per 16 ms. */
#define RETRY_FAST 20
#define RETRY_FAST_US 250L
#define RETRY_MAX_US 16000L
#define LINE_WAIT_US 1000000L /* an accepted peer's line */
#define HOUSEKEEP_US 50000L /* ppoll's longest sleep: stale peers close */
#define PEERS_MAX \
	16 /* accepted connections read at once; the listen
		      * backlog holds the others */

/* One outgoing connection. */
struct conn {
	int fd;
	int reading; /* connected, waiting for the peer's line */
	long retry_at; /* us: when to connect again (fd -1) */
	unsigned retries; /* connects that failed so far */
	char buf[DISTENV_REHEARSAL_LINE_MAX];
	size_t used;
};

/* An accepted connection, read without blocking: a node that is slow
 * to send its line never holds up the others. */
struct peer {
	struct conn c;
	int ring; /* accepted on the ring port (else the check-in port) */
	long until; /* us: closed unanswered after this */
};

static long now_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (long) t.tv_sec * 1000000 + t.tv_nsec / 1000;
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

/* When a connect that failed is tried again: RETRY_FAST_US after each
 * of the first RETRY_FAST failures, then twice as long after each, up
 * to RETRY_MAX_US. */
static long retry_after(struct conn *c, long now)
{
	unsigned n = ++c->retries;
	long d = RETRY_FAST_US;

	while (n > RETRY_FAST && d < RETRY_MAX_US) {
		d *= 2;
		n--;
	}
	return now + d;
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

static void send_line(int fd, const char *line)
{
	(void) !send(fd, line, strlen(line), MSG_NOSIGNAL);
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
	int lm, lr; /* the master's check-in listener, the ring's */
	struct peer in[PEERS_MAX]; /* accepted, fd -1: free */
	size_t n_in;
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
 * almost always the first, and a refusal there mostly means that it is
 * not listening yet: so three tries in four are the first, the others
 * in turn at every fourth, skipping those a foreign program answered. */
static void next_candidate(struct loop *l)
{
	unsigned i;

	for (i = 0; i < 4 * DISTENV_REHEARSAL_RING_TRIES; i++) {
		unsigned a = ++l->attempt, t;

		t = a % 4 ? 0 :
			    1 + (a / 4 - 1) %
					    (DISTENV_REHEARSAL_RING_TRIES - 1);
		if (!l->foreign[t]) {
			l->next_try = t;
			return;
		}
	}
}

static void accept_one(struct loop *l, int lfd, int ring, long now)
{
	int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	size_t i;

	if (fd < 0)
		return;
	for (i = 0; i < PEERS_MAX; i++)
		if (l->in[i].c.fd < 0) {
			memset(&l->in[i], 0, sizeof(l->in[i]));
			l->in[i].c.fd = fd;
			l->in[i].ring = ring;
			l->in[i].until = now + LINE_WAIT_US;
			l->n_in++;
			return;
		}
	close(fd);
}

static void peer_close(struct loop *l, struct peer *pe)
{
	conn_close(&pe->c, 0);
	l->n_in--;
}

/* An accepted node's line: the master marks a check-in and answers it;
 * the ring port answers its previous node only, so that it knows this
 * node, not a foreign listener, took the port. */
static void serve(struct loop *l, struct peer *pe)
{
	const struct distenv_rehearsal_plan *p = l->p;
	char line[DISTENV_REHEARSAL_LINE_MAX];
	struct distenv_rehearsal_facts facts;
	uint32_t node;
	int rc = conn_read_line(&pe->c);

	if (rc == 0)
		return;
	if (rc == 1 && !pe->ring &&
	    distenv_rehearsal_facts_parse(pe->c.buf, "checkin", p->job_id,
					  p->step_id, &node, &facts) == 0 &&
	    node < p->nnodes) {
		l->res->seen[node] = 1;
		l->res->facts[node] = facts;
		distenv_rehearsal_facts_line(line, sizeof(line), "ok",
					     p->job_id, p->step_id, p->node_id,
					     &l->peers->facts);
		send_line(pe->c.fd, line);
	} else if (rc == 1 && pe->ring &&
		   distenv_rehearsal_line_parse(pe->c.buf, "ring", p->job_id,
						p->step_id, &node) == 0 &&
		   node == p->prev_node_id) {
		l->res->prev_ok = 1;
		distenv_rehearsal_line(line, sizeof(line), "ring", p->job_id,
				       p->step_id, p->node_id);
		send_line(pe->c.fd, line);
	}
	peer_close(l, pe);
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
			l->cm.retry_at = retry_after(&l->cm, now);
		}
	}
	if (!r->next_ok && l->cn.fd < 0 && now >= l->cn.retry_at) {
		r->next_port = p->next_ports[l->next_try];
		l->cn.fd = start_connect(&l->peers->next, r->next_port,
					 &l->peers->src);
		if (l->cn.fd < 0) {
			r->next_errno = errno;
			l->cn.retry_at = retry_after(&l->cn, now);
		}
	}
}

/* Progress on the connection to the master. */
static void step_master(struct loop *l, short ev, long now)
{
	const struct distenv_rehearsal_plan *p = l->p;
	struct distenv_rehearsal_result *r = l->res;
	char line[DISTENV_REHEARSAL_LINE_MAX];
	struct distenv_rehearsal_facts facts;
	uint32_t node;
	int rc;

	if (!l->cm.reading) {
		int e = connect_result(l->cm.fd);

		if (e) {
			r->master_errno = e;
			conn_close(&l->cm, retry_after(&l->cm, now));
			return;
		}
		distenv_rehearsal_facts_line(line, sizeof(line), "checkin",
					     p->job_id, p->step_id, p->node_id,
					     &l->peers->facts);
		send_line(l->cm.fd, line);
		l->cm.reading = 1;
		return;
	}
	(void) ev;
	rc = conn_read_line(&l->cm);
	if (rc == 0)
		return;
	if (rc == 1 &&
	    distenv_rehearsal_facts_parse(l->cm.buf, "ok", p->job_id,
					  p->step_id, &node, &facts) == 0) {
		r->facts[p->master_node_id] = facts;
		r->master_ok = 1;
		r->master_errno = 0;
		conn_close(&l->cm, 0);
		return;
	}
	if (rc < 0 && l->cm.used == 0)
		r->master_errno = ECONNRESET; /* not read in time: again */
	else
		r->master_foreign = 1;
	conn_close(&l->cm, retry_after(&l->cm, now));
}

/* Progress on the connection to the ring neighbour: this node's line
 * first, then the neighbour's answer. */
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
			conn_close(&l->cn, retry_after(&l->cn, now));
			/* refused: the neighbour may listen on another
			 * candidate (its first was taken) */
			if (e == ECONNREFUSED)
				next_candidate(l);
			return;
		}
		distenv_rehearsal_line(line, sizeof(line), "ring", p->job_id,
				       p->step_id, p->node_id);
		send_line(l->cn.fd, line);
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
		r->next_ok = 1;
		r->next_errno = 0;
		r->next_foreign = 0;
		conn_close(&l->cn, 0);
		return;
	}
	if (rc < 0 && l->cn.used == 0) {
		/* closed without a word: the neighbour did not read this
		 * node's line in time (a loaded node); again */
		r->next_errno = ECONNRESET;
		conn_close(&l->cn, retry_after(&l->cn, now));
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

/* How long ppoll may sleep: until the next retry of a connect that
 * failed, the deadline or HOUSEKEEP_US, whichever comes first. */
static struct timespec poll_wait(const struct loop *l, long now, long deadline)
{
	const struct distenv_rehearsal_result *r = l->res;
	long until = now + HOUSEKEEP_US, us;

	if (deadline < until)
		until = deadline;
	if (!l->p->on_master && !r->master_ok && l->cm.fd < 0 &&
	    l->cm.retry_at < until)
		until = l->cm.retry_at;
	if (!r->next_ok && l->cn.fd < 0 && l->cn.retry_at < until)
		until = l->cn.retry_at;
	us = until > now ? until - now : 0;
	return (struct timespec){ us / 1000000, us % 1000000 * 1000 };
}

/* One ppoll(2) set: the listeners (while a slot is free), this node's
 * two connections, the accepted ones; where each is in fds, -1 none. */
struct round {
	struct pollfd fds[4 + PEERS_MAX];
	int n, im, ir, icm, icn, at[PEERS_MAX];
};

static int add_fd(struct round *r, int fd, short events)
{
	r->fds[r->n] = (struct pollfd){ fd, events, 0 };
	return r->n++;
}

static void fill_round(struct loop *l, struct round *r, long now)
{
	size_t i;

	r->n = 0;
	r->im = r->ir = r->icm = r->icn = -1;
	if (l->lm >= 0 && l->n_in < PEERS_MAX)
		r->im = add_fd(r, l->lm, POLLIN);
	if (l->lr >= 0 && l->n_in < PEERS_MAX)
		r->ir = add_fd(r, l->lr, POLLIN);
	if (l->cm.fd >= 0)
		r->icm = add_fd(r, l->cm.fd, l->cm.reading ? POLLIN : POLLOUT);
	if (l->cn.fd >= 0)
		r->icn = add_fd(r, l->cn.fd, l->cn.reading ? POLLIN : POLLOUT);
	for (i = 0; i < PEERS_MAX; i++) {
		r->at[i] = -1;
		if (l->in[i].c.fd < 0)
			continue;
		if (now >= l->in[i].until)
			peer_close(l, &l->in[i]);
		else
			r->at[i] = add_fd(r, l->in[i].c.fd, POLLIN);
	}
}

static void run_round(struct loop *l, struct round *r, long now)
{
	size_t i;

	/* this node's own lines first: a peer may wait for them */
	if (r->icm >= 0 && r->fds[r->icm].revents)
		step_master(l, r->fds[r->icm].revents, now);
	if (r->icn >= 0 && r->fds[r->icn].revents)
		step_next(l, now);
	for (i = 0; i < PEERS_MAX; i++)
		if (r->at[i] >= 0 && r->fds[r->at[i]].revents)
			serve(l, &l->in[i]);
	if (r->im >= 0 && r->fds[r->im].revents)
		accept_one(l, l->lm, 0, now);
	if (r->ir >= 0 && r->fds[r->ir].revents)
		accept_one(l, l->lr, 1, now);
}

/* The listeners: the master's check-in port, this node's ring port
 * (its first free candidate). */
static void open_listeners(struct loop *l, int family)
{
	const struct distenv_rehearsal_plan *p = l->p;
	struct distenv_rehearsal_result *res = l->res;
	unsigned t;

	if (p->on_master) {
		l->lm = listen_on(family, p->master_port);
		if (l->lm < 0) {
			res->listen_errno = errno;
			res->listen_port = p->master_port;
		}
	}
	for (t = 0; t < DISTENV_REHEARSAL_RING_TRIES && l->lr < 0; t++)
		l->lr = listen_on(family, p->ring_ports[t]);
	if (l->lr < 0 && !res->listen_errno) {
		res->listen_errno = errno;
		res->listen_ring = 1;
		res->listen_port = p->ring_ports[0];
	}
}

void distenv_sys_rehearse(const struct distenv_rehearsal_plan *p,
			  const struct distenv_rehearsal_peers *peers,
			  struct distenv_rehearsal_result *res)
{
	struct loop l;
	struct round r;
	long start = now_us(), deadline = start + p->timeout_ms * 1000L, now;
	unsigned t;

	memset(&l, 0, sizeof(l));
	l.p = p;
	l.peers = peers;
	l.res = res;
	l.cm.fd = l.cn.fd = l.lr = l.lm = -1;
	for (t = 0; t < PEERS_MAX; t++)
		l.in[t].c.fd = -1;
	open_listeners(&l, peers->next.family);
	for (now = start; now < deadline && !done(&l); now = now_us()) {
		struct timespec wait;

		start_conns(&l, now);
		fill_round(&l, &r, now);
		wait = poll_wait(&l, now, deadline);
		if (ppoll(r.fds, (nfds_t) r.n, &wait, NULL) > 0)
			run_round(&l, &r, now_us());
	}
	for (t = 0; t < PEERS_MAX; t++)
		if (l.in[t].c.fd >= 0)
			close(l.in[t].c.fd);
	at_deadline(&l.cm, &res->master_errno);
	at_deadline(&l.cn, &res->next_errno);
	if (l.lm >= 0)
		close(l.lm);
	if (l.lr >= 0)
		close(l.lr);
	res->waited_ms = (int) ((now_us() - start) / 1000);
}
