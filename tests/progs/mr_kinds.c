/*
 * Memory registration of each kind of memory, with every byte checked
 * after another process moved data into and out of it (issue 17).
 *
 *   mr_kinds -k KIND [options]          server: registers a region of KIND
 *   mr_kinds -k KIND [options] HOST     client: READ, WRITE, SEND into it
 *   mr_kinds -e                         bad input: EFAULT cases, no peer
 *
 * KIND: anon (private anonymous, touched), untouched (private anonymous,
 * never touched before registration), stack (the server's stack), twice
 * (the same range registered twice; the peer uses the second key, the
 * receive the first), shared (MAP_SHARED anonymous), file (MAP_SHARED of
 * a file in /tmp), posix (shm_open), sysv (shmget/shmat), huge (private
 * hugetlb, 2 MiB pages: some must be reserved), fork (private anonymous;
 * after the WRITE the server calls fork() and its child overwrites its
 * copy, which must not reach the parent's; ibv_fork_init first), odp
 * (IBV_ACCESS_ON_DEMAND over a range unmapped and mapped again after
 * registration, with ibv_advise_mr prefetch), odp_implicit (the whole
 * address space, the region mapped after registration), posted (private
 * anonymous, registered after a first region of the context, so without a
 * request to the daemon: verbs/mr_post.c; before the peer uses it,
 * ibv_dealloc_pd of its PD fails with EBUSY, and a region registered and
 * deregistered before anyone used it leaves its key unused by the next
 * SOF_POSTED_KEYS registrations).
 *
 * The client RDMA READs the region and checks the server's pattern, RDMA
 * WRITEs a second pattern that the server checks, then SENDs a third that
 * the server receives into the region and checks. Then the server
 * deregisters and the client WRITEs with the old key: the WRITE fails
 * with IBV_WC_REM_ACCESS_ERR and the region is unchanged. With -e the program
 * registers an unmapped range, a PROT_NONE range, a range with a hole in
 * its middle and a read-only range with write access, requires EFAULT for
 * each (the read-only range registers for remote read), and that nothing
 * is left behind: the range's mappings are as before (no memfd of
 * softofed in /proc/self/maps) and a good registration still works.
 *
 * Output ends with "ok" or "fail: REASON"; exit 0 when everything holds.
 */
#include "hostpair.h"

#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <sys/wait.h>

#define STACK_LEN (64 * 1024)
/* more registrations than the daemon reserves keys at a time (64) */
#define SOF_POSTED_KEYS 200

struct opts {
	struct hp_opts hp;
	const char *host, *kind;
	size_t len;
	bool efault;
};

static uint8_t pat(size_t i, unsigned int k) { return (uint8_t)(i * (7 + 6 * k) + k * 3 + 1); }

static void fill(uint8_t *p, size_t len, unsigned int k)
{
	for (size_t i = 0; i < len; i++)
		p[i] = pat(i, k);
}

static int check(const uint8_t *p, size_t len, unsigned int k, const char *what)
{
	for (size_t i = 0; i < len; i++) {
		if (p[i] != pat(i, k)) {
			printf("fail: %s: byte %zu is %u, expected %u\n", what, i, p[i], pat(i, k));
			return -1;
		}
	}
	return 0;
}

struct side {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	int gid_index;
	union ibv_gid gid;
	int sock;
};

#define ACC (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)

static void side_up(struct side *s, const struct opts *o)
{
	int lsock;

	s->sock = hp_rendezvous(o->host, o->hp.port, o->hp.secs, &lsock);
	if (lsock >= 0)
		close(lsock);
	s->ctx = hp_open(o->hp.dev);
	s->gid_index = hp_local_gid(s->ctx, o->hp.gid_index, s->sock, &s->gid);
	s->pd = ibv_alloc_pd(s->ctx);
	s->cq = ibv_create_cq(s->ctx, 8, NULL, NULL, 0);
	if (!s->pd || !s->cq)
		hp_fail("alloc pd/cq: %s", strerror(errno));
	s->qp = hp_create_qp(s->pd, s->cq, IBV_QPT_RC, 4, 4, 1);
}

static void side_connect(struct side *s, const struct opts *o, struct hp_info *me,
			 struct hp_info *peer)
{
	struct hp_path p;

	me->qpn = s->qp->qp_num;
	me->psn = hp_random_psn();
	memcpy(me->gid, s->gid.raw, 16);
	hp_exchange(s->sock, me, peer, o->hp.secs);
	hp_path_peer(&p, s->gid_index, me, peer, IBV_MTU_1024);
	p.access = ACC;
	p.max_dest_rd_atomic = 1;
	p.max_rd_atomic = 1;
	p.min_rnr_timer = 12;
	p.timeout = 14;
	p.retry_cnt = 7;
	p.rnr_retry = 7;
	if (hp_qp_modify(s->qp, &p, IBV_QPS_RTS))
		hp_fail("modify QP to RTS: %s", strerror(errno));
}

static void wait_one(struct side *s, const struct opts *o, const char *what)
{
	struct ibv_wc wc;

	if (!hp_poll_until(s->cq, &wc, hp_now_us() + (int64_t)o->hp.secs * 1000000, 0))
		hp_fail("%s: no completion", what);
	if (wc.status != IBV_WC_SUCCESS)
		hp_fail("%s: %s", what, hp_wc_status_name(wc.status));
}

/* fork() with the region registered (ibv_fork_init first, as rdma-core
 * asks): the child's memory is its own (its writes stay in it), the
 * parent's keeps the peer's data and takes the next SEND. */
static int fork_child(uint8_t *buf, size_t len)
{
	int st;
	pid_t pid = fork();

	if (pid < 0)
		hp_fail("fork: %s", strerror(errno));
	if (!pid) {
		if (check(buf, len, 1, "the child's copy after fork"))
			_exit(1);
		fill(buf, len, 3);
		_exit(check(buf, len, 3, "the child's own write") ? 1 : 0);
	}
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st)) {
		printf("fail: the child after fork failed\n");
		return -1;
	}
	if (check(buf, len, 1, "the parent's region after the child wrote its copy"))
		return -1;
	printf("fork: the child's writes stayed in the child\n");
	return 0;
}

/* On-demand paging (kind odp: explicit, over a range that is unmapped
 * and mapped again after registration; odp_implicit: the whole address
 * space, the region mapped after registration): the device's ODP caps,
 * ibv_advise_mr prefetch (and ENOENT for a region that is not ODP); the
 * region is filled with the first pattern. NULL on failure (printed). */
static struct ibv_mr *odp_reg(struct side *s, const struct opts *o, uint8_t **bufp, size_t len)
{
	bool implicit = !strcmp(o->kind, "odp_implicit");
	struct ibv_device_attr_ex dx;
	struct ibv_mr *mr, *plain;
	struct ibv_sge sge;
	uint8_t *buf;
	int err;

	if (ibv_query_device_ex(s->ctx, NULL, &dx) ||
	    !(dx.odp_caps.general_caps & IBV_ODP_SUPPORT) ||
	    (implicit && !(dx.odp_caps.general_caps & IBV_ODP_SUPPORT_IMPLICIT)) ||
	    (dx.odp_caps.per_transport_caps.rc_odp_caps &
	     (IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV | IBV_ODP_SUPPORT_WRITE |
	      IBV_ODP_SUPPORT_READ)) != (IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV |
					 IBV_ODP_SUPPORT_WRITE | IBV_ODP_SUPPORT_READ)) {
		printf("fail: ODP caps: general %#llx rc %#x\n",
		       (unsigned long long)dx.odp_caps.general_caps,
		       dx.odp_caps.per_transport_caps.rc_odp_caps);
		return NULL;
	}
	if (implicit) {
		mr = ibv_reg_mr(s->pd, NULL, SIZE_MAX, ACC | IBV_ACCESS_ON_DEMAND);
		buf = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	} else {
		buf = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		mr = buf == MAP_FAILED ? NULL
				       : ibv_reg_mr(s->pd, buf, len, ACC | IBV_ACCESS_ON_DEMAND);
		/* the pages registered go; new ones come at the same address */
		if (mr && (munmap(buf, len) ||
			   mmap(buf, len, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != buf))
			hp_fail("remap: %s", strerror(errno));
	}
	if (!mr || buf == MAP_FAILED) {
		printf("fail: ODP registration (%s): %s\n", o->kind, strerror(errno));
		return NULL;
	}
	sge = (struct ibv_sge){.addr = (uintptr_t)buf, .length = (uint32_t)len, .lkey = mr->lkey};
	err = ibv_advise_mr(s->pd, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE, IBV_ADVISE_MR_FLAG_FLUSH,
			    &sge, 1);
	if (err) {
		printf("fail: ibv_advise_mr prefetch: %s\n", strerror(err));
		return NULL;
	}
	plain = ibv_reg_mr(s->pd, buf, 4096, ACC);
	sge.lkey = plain ? plain->lkey : 0;
	sge.length = 4096;
	err = ibv_advise_mr(s->pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 0, &sge, 1);
	if (!plain || err != ENOENT) {
		printf("fail: ibv_advise_mr of a region that is not ODP: %s\n", strerror(err));
		return NULL;
	}
	ibv_dereg_mr(plain);
	printf("%s: ODP caps, prefetch, registered before the pages were mapped\n", o->kind);
	fill(buf, len, 0);
	*bufp = buf;
	return mr;
}

/* The server's side over region buf of len bytes. */
/* kind posted, before the region under test: a first region (the one
 * that hands the daemon this process's memory), then a region registered
 * and deregistered before anyone used it, whose key the next registrations
 * must not get. The first region stays (returned). */
static struct ibv_mr *posted_prelude(struct side *s, uint8_t *buf, size_t len)
{
	static uint8_t scratch[4096];
	struct ibv_mr *first, *gone, *m[SOF_POSTED_KEYS];
	uint32_t key;
	int fails = 0;

	first = ibv_reg_mr(s->pd, scratch, sizeof(scratch), ACC);
	gone = first ? ibv_reg_mr(s->pd, buf, len, ACC) : NULL;
	if (!gone) {
		printf("fail: posted: first registrations: %s\n", strerror(errno));
		return NULL;
	}
	key = gone->rkey;
	if (ibv_dereg_mr(gone)) {
		printf("fail: posted: ibv_dereg_mr of a region nobody used\n");
		return NULL;
	}
	for (int i = 0; i < SOF_POSTED_KEYS; i++) {
		m[i] = ibv_reg_mr(s->pd, buf + (size_t)(i % 8) * 64, 64, ACC);
		if (!m[i] || m[i]->lkey != m[i]->rkey || m[i]->rkey == key)
			fails++;
	}
	for (int i = 0; i < SOF_POSTED_KEYS; i++)
		if (m[i] && ibv_dereg_mr(m[i]))
			fails++;
	if (fails) {
		printf("fail: posted: %d of %d registrations failed or reused the key of a "
		       "deregistered region\n",
		       fails, SOF_POSTED_KEYS);
		return NULL;
	}
	return first;
}

static int serve(const struct opts *o, uint8_t *buf, size_t len)
{
	struct hp_info me = {0}, peer;
	struct ibv_mr *mr = NULL, *mr2 = NULL, *first = NULL;
	struct ibv_sge sge;
	struct ibv_recv_wr rwr = {0}, *bad;
	struct side s;

	bool untouched = !strcmp(o->kind, "untouched");

	side_up(&s, o);
	if (!strncmp(o->kind, "odp", 3)) {
		mr = odp_reg(&s, o, &buf, len);
		if (!mr)
			return 1;
	} else if (!untouched) {
		fill(buf, len, 0);
	}
	if (!strcmp(o->kind, "posted")) {
		first = posted_prelude(&s, buf, len);
		if (!first)
			return 1;
	}
	if (!mr)
		mr = ibv_reg_mr(s.pd, buf, len, ACC);
	if (!mr) {
		printf("fail: ibv_reg_mr of %s memory: %s\n", o->kind, strerror(errno));
		return 1;
	}
	/* a region nobody used yet is its PD's user all the same */
	if (first) {
		int err = ibv_dealloc_pd(s.pd);

		if (err != EBUSY) {
			printf("fail: ibv_dealloc_pd with a posted region: %s, not EBUSY\n",
			       strerror(err));
			return 1;
		}
	}
	/* never-touched pages read as zero through the registration, then
	 * take the pattern through the registered pages */
	for (size_t i = 0; untouched && i < len; i++) {
		if (buf[i]) {
			printf("fail: untouched byte %zu is %u after registration\n", i, buf[i]);
			return 1;
		}
	}
	if (untouched)
		fill(buf, len, 0);
	if (!strcmp(o->kind, "twice")) {
		mr2 = ibv_reg_mr(s.pd, buf, len, ACC);
		if (!mr2) {
			printf("fail: second ibv_reg_mr: %s\n", strerror(errno));
			return 1;
		}
	}
	if (check(buf, len, 0, "contents after registration"))
		return 1;
	sge = (struct ibv_sge){.addr = (uintptr_t)buf, .length = (uint32_t)len, .lkey = mr->lkey};
	rwr.sg_list = &sge;
	rwr.num_sge = 1;
	me.rkey = mr2 ? mr2->rkey : mr->rkey;
	me.addr = (uintptr_t)buf;
	me.len = len;
	side_connect(&s, o, &me, &peer);
	if (ibv_post_recv(s.qp, &rwr, &bad))
		hp_fail("ibv_post_recv");
	hp_sync(s.sock, o->hp.secs); /* client: READ, then WRITE */
	hp_sync(s.sock, o->hp.secs);
	if (check(buf, len, 1, "after the peer's RDMA WRITE"))
		return 1;
	if (!strcmp(o->kind, "fork") && fork_child(buf, len))
		return 1;
	hp_sync(s.sock, o->hp.secs); /* client: SEND */
	wait_one(&s, o, "receive");
	if (check(buf, len, 2, "after the peer's SEND"))
		return 1;
	if ((mr2 && ibv_dereg_mr(mr2)) || ibv_dereg_mr(mr) || (first && ibv_dereg_mr(first)))
		hp_fail("ibv_dereg_mr");
	hp_sync(s.sock, o->hp.secs); /* client: a WRITE with the old key */
	hp_sync(s.sock, o->hp.secs);
	if (check(buf, len, 2, "after a WRITE with the key of a deregistered region"))
		return 1;
	printf("server %s %zu bytes\nok\n", o->kind, len);
	return 0;
}

/* Run the server with its region on this function's stack. */
static __attribute__((noinline)) int serve_stack(const struct opts *o)
{
	uint8_t buf[STACK_LEN];

	return serve(o, buf, sizeof(buf));
}

static int client(const struct opts *o)
{
	struct hp_info me = {0}, peer;
	struct ibv_send_wr wr, *bad;
	struct ibv_sge sge;
	struct ibv_mr *mr;
	struct side s;
	uint8_t *buf;

	side_up(&s, o);
	me.len = 0;
	side_connect(&s, o, &me, &peer);
	buf = aligned_alloc(4096, (peer.len + 4095) & ~(size_t)4095);
	if (!buf)
		hp_fail("aligned_alloc");
	memset(buf, 0, peer.len);
	mr = ibv_reg_mr(s.pd, buf, peer.len, ACC);
	if (!mr)
		hp_fail("client ibv_reg_mr: %s", strerror(errno));
	sge = (struct ibv_sge){
	    .addr = (uintptr_t)buf, .length = (uint32_t)peer.len, .lkey = mr->lkey};
	memset(&wr, 0, sizeof(wr));
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = peer.addr;
	wr.wr.rdma.rkey = peer.rkey;
	hp_sync(s.sock, o->hp.secs);
	wr.opcode = IBV_WR_RDMA_READ;
	if (ibv_post_send(s.qp, &wr, &bad))
		hp_fail("post READ");
	wait_one(&s, o, "RDMA READ");
	if (check(buf, peer.len, 0, "RDMA READ of the server's region"))
		return 1;
	fill(buf, peer.len, 1);
	wr.opcode = IBV_WR_RDMA_WRITE;
	if (ibv_post_send(s.qp, &wr, &bad))
		hp_fail("post WRITE");
	wait_one(&s, o, "RDMA WRITE");
	hp_sync(s.sock, o->hp.secs); /* the server checks the WRITE */
	hp_sync(s.sock, o->hp.secs);
	fill(buf, peer.len, 2);
	wr.opcode = IBV_WR_SEND;
	if (ibv_post_send(s.qp, &wr, &bad))
		hp_fail("post SEND");
	wait_one(&s, o, "SEND");
	hp_sync(s.sock, o->hp.secs);
	/* the server deregistered: its old key reaches nothing (IBA 10.6.3) */
	fill(buf, peer.len, 4);
	wr.opcode = IBV_WR_RDMA_WRITE;
	if (ibv_post_send(s.qp, &wr, &bad))
		hp_fail("post WRITE after deregistration");
	{
		struct ibv_wc wc;

		if (!hp_poll_until(s.cq, &wc, hp_now_us() + (int64_t)o->hp.secs * 1000000, 0))
			hp_fail("WRITE after deregistration: no completion");
		if (wc.status != IBV_WC_REM_ACCESS_ERR) {
			printf("fail: WRITE after deregistration: %s, expected "
			       "IBV_WC_REM_ACCESS_ERR\n",
			       hp_wc_status_name(wc.status));
			return 1;
		}
	}
	hp_sync(s.sock, o->hp.secs);
	printf("client %zu bytes\nok\n", (size_t)peer.len);
	return 0;
}

/* How many mappings of softofed's registration memfds the process has. */
static int memfd_maps(void)
{
	char line[512];
	FILE *f = fopen("/proc/self/maps", "re");
	int n = 0;

	if (!f)
		hp_fail("/proc/self/maps: %s", strerror(errno));
	while (fgets(line, sizeof(line), f))
		n += strstr(line, "softofed-mr") != NULL;
	fclose(f);
	return n;
}

static int expect_efault(struct ibv_pd *pd, void *addr, size_t len, const char *what)
{
	struct ibv_mr *mr = ibv_reg_mr(pd, addr, len, ACC);

	if (mr) {
		printf("fail: %s registered\n", what);
		return -1;
	}
	if (errno != EFAULT) {
		printf("fail: %s: %s, expected EFAULT\n", what, strerror(errno));
		return -1;
	}
	printf("%s: EFAULT\n", what);
	return 0;
}

static int bad_input(const struct opts *o)
{
	const size_t pg = 4096;
	struct ibv_context *ctx = hp_open(o->hp.dev);
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	uint8_t *a = mmap(NULL, 4 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int before, bad = 0;
	struct ibv_mr *mr;

	if (!pd || a == MAP_FAILED)
		hp_fail("set-up: %s", strerror(errno));
	fill(a, 4 * pg, 3);
	before = memfd_maps();
	/* a whole range unmapped */
	munmap(a + 3 * pg, pg);
	bad |= expect_efault(pd, a + 3 * pg, pg, "unmapped range");
	/* PROT_NONE */
	mprotect(a + 2 * pg, pg, PROT_NONE);
	bad |= expect_efault(pd, a + 2 * pg, pg, "PROT_NONE range");
	bad |= expect_efault(pd, a, 3 * pg, "range ending in PROT_NONE");
	/* a hole in the middle: [a, a+pg) mapped, [a+pg, a+2pg) not */
	mprotect(a + 2 * pg, pg, PROT_READ | PROT_WRITE);
	munmap(a + pg, pg);
	bad |= expect_efault(pd, a, 3 * pg, "range with a hole");
	bad |= expect_efault(pd, a + 2 * pg, 2 * pg, "range partly beyond the mapping");
	/* read-only pages: readable by a peer, but no write may be granted */
	mprotect(a, pg, PROT_READ);
	bad |= expect_efault(pd, a, pg, "read-only range with write access");
	mr = ibv_reg_mr(pd, a, pg, IBV_ACCESS_REMOTE_READ);
	if (!mr) {
		printf("fail: read-only range for remote read: %s\n", strerror(errno));
		bad = 1;
	} else {
		ibv_dereg_mr(mr);
	}
	mprotect(a, pg, PROT_READ | PROT_WRITE);
	if (memfd_maps() != before) {
		printf("fail: a failed registration left %d memfd mappings\n",
		       memfd_maps() - before);
		bad = 1;
	}
	/* the pages around are untouched, and a good registration works */
	if (check(a, pg, 3, "first page after the failures"))
		bad = 1;
	mr = ibv_reg_mr(pd, a, pg, ACC);
	if (!mr) {
		printf("fail: good registration after the failures: %s\n", strerror(errno));
		bad = 1;
	} else if (ibv_dereg_mr(mr)) {
		printf("fail: ibv_dereg_mr\n");
		bad = 1;
	}
	if (check(a, pg, 3, "first page after registration"))
		bad = 1;
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	if (!bad)
		printf("ok\n");
	return bad;
}

/* The server's region of o->kind (not the stack), o->len bytes. */
static uint8_t *region(const struct opts *o)
{
	int priv = MAP_PRIVATE | MAP_ANONYMOUS, fd = -1;
	void *p = MAP_FAILED;

	if (!strcmp(o->kind, "anon") || !strcmp(o->kind, "untouched") ||
	    !strcmp(o->kind, "twice") || !strcmp(o->kind, "fork") || !strcmp(o->kind, "posted")) {
		p = mmap(NULL, o->len, PROT_READ | PROT_WRITE, priv, -1, 0);
	} else if (!strcmp(o->kind, "shared")) {
		p = mmap(NULL, o->len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	} else if (!strcmp(o->kind, "huge")) {
		size_t huge = (o->len + (2u << 20) - 1) & ~(size_t)((2u << 20) - 1);

		p = mmap(NULL, huge, PROT_READ | PROT_WRITE, priv | MAP_HUGETLB, -1, 0);
	} else if (!strcmp(o->kind, "file")) {
		char path[] = "/tmp/mr_kinds.XXXXXX";

		fd = mkstemp(path);
		if (fd >= 0)
			unlink(path);
	} else if (!strcmp(o->kind, "posix")) {
		char name[64];

		snprintf(name, sizeof(name), "/mr_kinds.%d", (int)getpid());
		fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
		if (fd >= 0)
			shm_unlink(name);
	} else if (!strcmp(o->kind, "sysv")) {
		int id = shmget(IPC_PRIVATE, o->len, IPC_CREAT | 0600);

		if (id >= 0) {
			p = shmat(id, NULL, 0);
			if (p == (void *)-1)
				p = MAP_FAILED;
			shmctl(id, IPC_RMID, NULL); /* goes with the last detach */
		}
	} else {
		printf("fail: unknown kind %s\n", o->kind);
		return NULL;
	}
	if (fd >= 0) {
		if (!ftruncate(fd, (off_t)o->len))
			p = mmap(NULL, o->len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		close(fd);
	}
	if (p == MAP_FAILED) {
		printf("fail: %s memory of %zu bytes: %s\n", o->kind, o->len, strerror(errno));
		return NULL;
	}
	return p;
}

static void usage(const char *argv0)
{
	fprintf(stderr,
		"usage: %s -k KIND [options] [HOST] | %s -e\n"
		"  KIND: anon, untouched, stack, twice, shared, file, posix, sysv, huge, fork,\n"
		"        odp, odp_implicit\n"
		"  -l LEN   region length (default 1 MiB + 123; stack: %d)\n"
		"  -p PORT  TCP port of the rendezvous (default 18640)\n"
		"  -d DEV, -g INDEX, -T SECS as the other helpers\n",
		argv0, argv0, STACK_LEN);
	exit(2);
}

int main(int argc, char **argv)
{
	struct opts o;
	uint8_t *buf;
	int c;

	memset(&o, 0, sizeof(o));
	hp_opts_init(&o.hp, "18640", 60);
	o.len = (1 << 20) + 123;
	while ((c = getopt(argc, argv, "k:l:p:d:g:T:eh")) != -1) {
		if (hp_opt(&o.hp, c, optarg))
			continue;
		if (c == 'k')
			o.kind = optarg;
		else if (c == 'l')
			o.len = strtoull(optarg, NULL, 0);
		else if (c == 'e')
			o.efault = true;
		else
			usage(argv[0]);
	}
	if (optind < argc)
		o.host = argv[optind++];
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (o.efault)
		return bad_input(&o);
	if (!o.kind || optind != argc || !o.len)
		usage(argv[0]);
	if (o.host)
		return client(&o);
	if (!strcmp(o.kind, "stack"))
		return serve_stack(&o);
	if (!strncmp(o.kind, "odp", 3))
		return serve(&o, NULL, o.len);
	if (!strcmp(o.kind, "fork")) {
		if (ibv_fork_init() || ibv_is_fork_initialized() != IBV_FORK_UNNEEDED) {
			printf("fail: ibv_fork_init %d, ibv_is_fork_initialized %d\n",
			       ibv_fork_init(), (int)ibv_is_fork_initialized());
			return 1;
		}
	}
	buf = region(&o);
	return buf ? serve(&o, buf, o.len) : 1;
}
