/* distenv_launch_line.c: a launch line's arguments against the step
 * (distenv_launch_line.h). */
#include "distenv_launch_line.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "distenv_env.h"
#include "distenv_launch_int.h"
#include "distenv_options.h"

enum launcher {
	NONE,
	TORCHRUN,
	ACCELERATE,
	DEEPSPEED
};

enum slot {
	NODE_RANK,
	NNODES,
	NPROC,
	MASTER_ADDR,
	RDZV_ENDPOINT,
	RDZV_BACKEND,
	STANDALONE,
	N_SLOTS,
	FLAG, /* an option that takes no value */
	VALUE, /* an option that takes one, not judged */
};

/* Where each launcher's options go; names with underscores (torchrun
 * and accelerate take hyphens too, which are turned into underscores
 * before the lookup). NULL ends a table. */
struct option_row {
	const char *name;
	enum slot slot;
};

static const struct option_row torchrun_rows[] = {
	{ "--node_rank", NODE_RANK },
	{ "--nnodes", NNODES },
	{ "--nproc_per_node", NPROC },
	{ "--master_addr", MASTER_ADDR },
	{ "--rdzv_endpoint", RDZV_ENDPOINT },
	{ "--rdzv_backend", RDZV_BACKEND },
	{ "--standalone", STANDALONE },
	{ "--module", FLAG },
	{ "-m", FLAG },
	{ "--no_python", FLAG },
	{ "--run_path", FLAG },
	{ "--use_env", FLAG },
	{ "--virtual_local_rank", FLAG },
	{ NULL, FLAG },
};

static const struct option_row accelerate_rows[] = {
	{ "--machine_rank", NODE_RANK },
	{ "--num_machines", NNODES },
	{ "--main_process_ip", RDZV_ENDPOINT },
	{ "--rdzv_backend", RDZV_BACKEND },
	{ "--cpu", FLAG },
	{ "--multi_gpu", FLAG },
	{ "--tpu", FLAG },
	{ "--ipex", FLAG },
	{ "--enable_cpu_affinity", FLAG },
	{ "--dynamo_use_fullgraph", FLAG },
	{ "--dynamo_use_dynamic", FLAG },
	{ "--use_deepspeed", FLAG },
	{ "--use_fsdp", FLAG },
	{ "--use_megatron_lm", FLAG },
	{ "--use_xpu", FLAG },
	{ "--same_network", FLAG },
	{ "--module", FLAG },
	{ "-m", FLAG },
	{ "--no_python", FLAG },
	{ "--quiet", FLAG },
	{ "-q", FLAG },
	{ "--debug", FLAG },
	{ "--tpu_cluster", FLAG },
	{ "--no_tpu_cluster", FLAG },
	{ "--tpu_use_sudo", FLAG },
	{ "--downcast_bf16", FLAG },
	{ NULL, FLAG },
};

static const struct option_row deepspeed_rows[] = {
	{ "--node_rank", NODE_RANK },
	{ "--num_nodes", NNODES },
	{ "--master_addr", MASTER_ADDR },
	{ "--module", FLAG },
	{ "--no_python", FLAG },
	{ "--no_local_rank", FLAG },
	{ "--no_ssh", FLAG },
	{ "--no_ssh_check", FLAG },
	{ "--force_multi", FLAG },
	{ "--save_pid", FLAG },
	{ "--elastic_training", FLAG },
	{ "--bind_cores_to_rank", FLAG },
	{ NULL, FLAG },
};

struct given {
	int set, literal;
	char name[64]; /* as written, without "=VALUE" */
	char value[DISTENV_LAUNCH_WORD];
};

enum state {
	IDLE, /* looking for a launcher */
	PYTHON, /* python [options]: waiting for -m */
	PYTHON_M, /* python -m: the module names the launcher */
	ACCEL, /* accelerate: waiting for "launch" */
	OPTIONS, /* the launcher's options */
	SCRIPT, /* past them: the script and its arguments */
};

struct parse {
	const struct distenv_launch_facts *f;
	struct distenv_error *err, *warn;
	enum state state;
	enum launcher kind;
	struct given g[N_SLOTS];
	int pending; /* the next word is an option's value: its slot */
	int pending_unknown; /* ... of an option not in the table */
	int words; /* words of the shell command so far */
};

static const char *label(enum launcher kind)
{
	return kind == TORCHRUN   ? "torchrun" :
	       kind == ACCELERATE ? "accelerate launch" :
				    "deepspeed";
}

static const struct option_row *rows(enum launcher kind)
{
	return kind == TORCHRUN   ? torchrun_rows :
	       kind == ACCELERATE ? accelerate_rows :
				    deepspeed_rows;
}

static void start(struct parse *ps, enum launcher kind)
{
	memset(ps->g, 0, sizeof(ps->g));
	ps->kind = kind;
	ps->state = OPTIONS;
	ps->pending = -1;
	ps->pending_unknown = 0;
}

/* The launcher a word names when nothing is being parsed. */
static void idle_word(struct parse *ps, const struct distenv_launch_word *w)
{
	const char *base = distenv_launch_base(w->text);

	/* a command that prints a launch line does not run it */
	if (ps->words == 1 &&
	    (strcmp(base, "echo") == 0 || strcmp(base, "printf") == 0))
		ps->state = SCRIPT;
	else if (strcmp(base, "torchrun") == 0)
		start(ps, TORCHRUN);
	else if (strcmp(base, "deepspeed") == 0)
		start(ps, DEEPSPEED);
	else if (strcmp(base, "accelerate-launch") == 0)
		start(ps, ACCELERATE);
	else if (strcmp(base, "accelerate") == 0)
		ps->state = ACCEL;
	else if (strncmp(base, "python", 6) == 0 &&
		 strspn(base + 6, "0123456789.") == strlen(base + 6))
		ps->state = PYTHON;
}

static void module_word(struct parse *ps, const char *module)
{
	if (strcmp(module, "torch.distributed.run") == 0 ||
	    strcmp(module, "torch.distributed.launch") == 0)
		start(ps, TORCHRUN);
	else if (strcmp(module, "accelerate.commands.launch") == 0)
		start(ps, ACCELERATE);
	else if (strcmp(module, "deepspeed.launcher.runner") == 0)
		start(ps, DEEPSPEED);
	else
		ps->state = SCRIPT;
}

static void python_word(struct parse *ps, const char *text)
{
	if (strcmp(text, "-m") == 0)
		ps->state = PYTHON_M;
	else if (strncmp(text, "-m", 2) == 0)
		module_word(ps, text + 2);
	else if (text[0] != '-')
		ps->state = SCRIPT; /* python script.py */
}

static void store(struct parse *ps, int slot, const char *name,
		  const char *value, int literal)
{
	struct given *g = &ps->g[slot];

	g->set = 1;
	g->literal = literal;
	if (name != g->name)
		snprintf(g->name, sizeof(g->name), "%s", name);
	snprintf(g->value, sizeof(g->value), "%s", value);
}

/* An option word: its slot, its value when it has one (--opt=V), or
 * the next word's. */
static void option_word(struct parse *ps, const struct distenv_launch_word *w)
{
	char name[64], key[64];
	const char *eq = strchr(w->text, '=');
	size_t n = eq ? (size_t) (eq - w->text) : strlen(w->text), i;
	const struct option_row *r;

	snprintf(name, sizeof(name), "%.*s", (int) n, w->text);
	snprintf(key, sizeof(key), "%s", name);
	for (i = 2;
	     ps->kind != DEEPSPEED && key[0] == '-' && key[1] == '-' && key[i];
	     i++)
		if (key[i] == '-')
			key[i] = '_';
	for (r = rows(ps->kind); r->name && strcmp(r->name, key); r++)
		;
	if (r->name && r->slot == STANDALONE)
		store(ps, STANDALONE, name, "", 1);
	if (r->name && (r->slot == FLAG || r->slot == STANDALONE))
		return;
	if (eq) {
		if (r->name)
			store(ps, r->slot, name, eq + 1, w->literal);
		return;
	}
	ps->pending = r->name ? (int) r->slot : -1;
	ps->pending_unknown = !r->name;
	if (r->name)
		snprintf(ps->g[r->slot].name, sizeof(ps->g[r->slot].name), "%s",
			 name);
}

static int ends_with(const char *s, const char *tail)
{
	size_t a = strlen(s), b = strlen(tail);

	return a >= b && strcmp(s + a - b, tail) == 0;
}

/* A word among the launcher's options. */
static void options_word(struct parse *ps, const struct distenv_launch_word *w)
{
	if (ps->pending >= 0) {
		store(ps, ps->pending, ps->g[ps->pending].name, w->text,
		      w->literal);
		ps->pending = -1;
		return;
	}
	/* An option distenv does not know may be a flag: a script name
	 * or another option after it is not its value. */
	if (ps->pending_unknown) {
		ps->pending_unknown = 0;
		if (w->text[0] != '-' && !ends_with(w->text, ".py"))
			return;
	}
	if (strcmp(w->text, "--") == 0 || w->text[0] != '-' || !w->text[1])
		ps->state = SCRIPT;
	else
		option_word(ps, w);
}

/* The rendezvous the launcher will use ("static", "c10d", ...), or NULL
 * when the line leaves it to the task's shell. torchrun takes
 * PET_RDZV_BACKEND for an option not given (run.py's env action);
 * accelerate and DeepSpeed's runner default to static. */
static const char *backend(const struct parse *ps)
{
	const struct given *g = &ps->g[RDZV_BACKEND];

	if (g->set)
		return g->literal ? g->value : NULL;
	if (ps->kind == TORCHRUN && ps->f->rdzv_backend &&
	    ps->f->rdzv_backend[0])
		return ps->f->rdzv_backend;
	return "static";
}

static const char *where(const struct given *g, char *buf, size_t len)
{
	char name[64];

	snprintf(buf, len, "%s (the step's command)",
		 distenv_printable(g->name, name, sizeof(name)));
	return buf;
}

/* "torchrun --node_rank 0 on n2 (node index 1 of 2)" */
static void given_text(const struct parse *ps, const struct given *g, char *buf,
		       size_t len)
{
	char name[64], value[128], node[128];

	snprintf(buf, len, "%s %s%s%s on %s (node index %u of %u)",
		 label(ps->kind),
		 distenv_printable(g->name, name, sizeof(name)),
		 g->value[0] ? " " : "",
		 distenv_printable(g->value, value, sizeof(value)),
		 distenv_printable(ps->f->node_name ? ps->f->node_name : "?",
				   node, sizeof(node)),
		 ps->f->node_id, ps->f->nnodes);
}

/* How to give each node its own value: the variable distenv exports,
 * expanded by the task's shell, or (torchrun) nothing at all. */
static void fix_text(const struct parse *ps, int slot, const char *name,
		     char *buf, size_t len)
{
	static const char *const var[] = { "NODE_RANK", "NNODES",
					   "NPROC_PER_NODE", "MASTER_ADDR",
					   "MASTER_ADDR" };
	static const char *const pet[] = { "PET_NODE_RANK", "PET_NNODES",
					   "PET_NPROC_PER_NODE",
					   "PET_MASTER_ADDR",
					   "PET_RDZV_ENDPOINT" };
	int endpoint = slot == RDZV_ENDPOINT && ps->kind == TORCHRUN;
	char shown[64];
	int n;

	distenv_printable(name, shown, sizeof(shown));
	n = snprintf(buf, len,
		     "write %s \"$%s%s\" inside bash -c '...' (single quotes, "
		     "so that each node's shell expands its own value)",
		     shown, var[slot], endpoint ? ":$MASTER_PORT" : "");
	if (ps->kind == TORCHRUN && n > 0 && (size_t) n < len)
		snprintf(buf + n, len - (size_t) n,
			 ", or leave %s out: torchrun then reads %s, which "
			 "distenv sets (%s mode)",
			 shown, pet[slot], endpoint ? "elastic" : "torchrun");
}

static int fail(struct parse *ps, int slot, const char *why)
{
	char w[128], given[512], fix[DISTENV_ERROR_TEXT];

	given_text(ps, &ps->g[slot], given, sizeof(given));
	fix_text(ps, slot, ps->g[slot].name, fix, sizeof(fix));
	return distenv_error_set(ps->err, where(&ps->g[slot], w, sizeof(w)),
				 fix, "%s: %s", given, why);
}

/* A warning, unless one is already there; fix NULL: fix_text's. */
static void warn(struct parse *ps, int slot, const char *why,
		 const char *fix_given)
{
	char w[128], given[512], fix[DISTENV_ERROR_TEXT];

	if (distenv_error_is_set(ps->warn))
		return;
	given_text(ps, &ps->g[slot], given, sizeof(given));
	if (fix_given)
		snprintf(fix, sizeof(fix), "%s", fix_given);
	else
		fix_text(ps, slot, ps->g[slot].name, fix, sizeof(fix));
	distenv_error_set(ps->warn, where(&ps->g[slot], w, sizeof(w)), fix,
			  "%s: %s", given, why);
}

static int judge_standalone(struct parse *ps)
{
	char w[128], given[512];

	if (!ps->g[STANDALONE].set)
		return 0;
	given_text(ps, &ps->g[STANDALONE], given, sizeof(given));
	return distenv_error_set(
		ps->err, where(&ps->g[STANDALONE], w, sizeof(w)),
		"leave --standalone out: distenv's torchrun mode gives torchrun "
		"the step's nodes (PET_NNODES, PET_NODE_RANK, PET_MASTER_ADDR)",
		"%s: --standalone gives each node a rendezvous store of its own "
		"(torch/distributed/run.py: c10d on localhost:0 with a random "
		"id), so the step's %u nodes never meet: each forms a world "
		"alone or waits for the others until the timeout",
		given, ps->f->nnodes);
}

static int judge_node_rank(struct parse *ps)
{
	const struct given *g = &ps->g[NODE_RANK];
	const char *be = backend(ps);
	char why[384];
	uint32_t n;

	if (!g->set || !be)
		return 0;
	if (strcmp(be, "static") != 0) {
		snprintf(why, sizeof(why),
			 "ignored: with the %.32s rendezvous the node ranks "
			 "come from the order in which nodes join "
			 "(torch/distributed/run.py passes --node_rank to the "
			 "static rendezvous only)",
			 be);
		if (ps->kind != DEEPSPEED)
			warn(ps, NODE_RANK, why,
			     "leave it out: the rendezvous gives each node "
			     "its rank");
		return 0;
	}
	if (!g->literal || distenv_parse_u32(g->value, 1u << 30, &n) ||
	    n == ps->f->node_id)
		return 0;
	snprintf(why, sizeof(why),
		 "the step needs %s %u on this node; a rank that is not the "
		 "node's own is given twice, and the static rendezvous waits "
		 "for node rank %u until its timeout",
		 g->name, ps->f->node_id, ps->f->node_id);
	return fail(ps, NODE_RANK, why);
}

/* "N" or "MIN:MAX" */
static int parse_range(const char *v, uint32_t *lo, uint32_t *hi)
{
	char buf[64];
	char *colon;

	snprintf(buf, sizeof(buf), "%s", v);
	colon = strchr(buf, ':');
	if (colon)
		*colon = '\0';
	if (distenv_parse_u32(buf, 1u << 30, lo))
		return -1;
	if (!colon) {
		*hi = *lo;
		return 0;
	}
	return distenv_parse_u32(colon + 1, 1u << 30, hi) || *hi < *lo ? -1 : 0;
}

static int judge_nnodes(struct parse *ps)
{
	const struct given *g = &ps->g[NNODES];
	uint32_t lo, hi, have = ps->f->nnodes;
	char why[384];

	if (!g->set || !g->literal || parse_range(g->value, &lo, &hi) ||
	    (lo <= have && have <= hi))
		return 0;
	snprintf(why, sizeof(why),
		 "the step has %u nodes, so it needs %s %u; %s", have, g->name,
		 have,
		 lo > have ? "the rendezvous waits for nodes that never come "
			     "until its timeout" :
			     "the world has no place for all of the step's "
			     "nodes");
	return fail(ps, NNODES, why);
}

static void judge_nproc(struct parse *ps)
{
	const struct given *g = &ps->g[NPROC];
	uint32_t n, want;
	char why[384];

	if (!g->set || !g->literal || !ps->f->nproc ||
	    distenv_parse_u32(g->value, 1u << 20, &n) ||
	    distenv_parse_u32(ps->f->nproc, 1u << 20, &want) || n == want)
		return;
	snprintf(why, sizeof(why),
		 "distenv derived NPROC_PER_NODE=%u for this node (the step's "
		 "GPUs on it, or --distenv-nproc): %u workers %s",
		 want, n,
		 n > want ? "ask for GPUs the node's task does not have" :
			    "leave some of its GPUs idle");
	warn(ps, NPROC, why, NULL);
}

/* The given value that names the master, NULL when none does: torchrun's
 * --rdzv_endpoint, else (static) its --master_addr (run.py,
 * get_rdzv_endpoint); accelerate's --main_process_ip; DeepSpeed's
 * --master_addr. */
static int endpoint_slot(const struct parse *ps)
{
	const char *be = backend(ps);

	if (ps->kind == TORCHRUN && ps->g[RDZV_ENDPOINT].set)
		return RDZV_ENDPOINT;
	if (ps->kind == TORCHRUN)
		return be && strcmp(be, "static") == 0 &&
				       ps->g[MASTER_ADDR].set ?
			       MASTER_ADDR :
			       -1;
	if (ps->kind == ACCELERATE)
		return ps->g[RDZV_ENDPOINT].set ? RDZV_ENDPOINT : -1;
	return ps->g[MASTER_ADDR].set ? MASTER_ADDR : -1;
}

/* Whether host is the master as distenv knows it: the MASTER_ADDR in
 * force, or the master's node name. */
static int is_master(const struct parse *ps, const char *host)
{
	return distenv_launch_same_host(host, ps->f->master_addr) ||
	       distenv_launch_same_host(host, ps->f->master_host);
}

static int judge_endpoint(struct parse *ps)
{
	int slot = endpoint_slot(ps);
	const struct given *g = slot >= 0 ? &ps->g[slot] : NULL;
	const struct distenv_launch_facts *f = ps->f;
	char host[DISTENV_LAUNCH_WORD], why[512], shown[128];
	int self;

	if (!g)
		return 0;
	distenv_launch_host_part(g->value, host, sizeof(host));
	self = g->literal ? distenv_launch_same_host(host, f->node_name) :
			    distenv_launch_self_expansion(host);
	if (g->literal && is_master(ps, host))
		return 0;
	if (g->literal && distenv_launch_loopback(host)) {
		snprintf(why, sizeof(why),
			 "loopback in a %u-node step: every node connects to "
			 "itself, where no store listens (the master is %s, "
			 "MASTER_ADDR %s)",
			 f->nnodes, f->master_host ? f->master_host : "?",
			 f->master_addr ? f->master_addr : "?");
		return fail(ps, slot, why);
	}
	if (!self || f->node_id == f->master_node_id)
		return 0;
	snprintf(why, sizeof(why),
		 "%s is this node, but the rendezvous store is on the master, "
		 "%s (node index %u, MASTER_ADDR %s): this node waits for a "
		 "store on itself that nobody starts",
		 distenv_printable(host, shown, sizeof(shown)),
		 f->master_host ? f->master_host : "?", f->master_node_id,
		 f->master_addr ? f->master_addr : "?");
	return fail(ps, slot, why);
}

/* One launcher's arguments, once its command ended: the first error,
 * else the first warning. */
static int judge(struct parse *ps)
{
	if (judge_standalone(ps) || judge_node_rank(ps) || judge_nnodes(ps) ||
	    judge_endpoint(ps))
		return -1;
	judge_nproc(ps);
	return 0;
}

/* One word of the line (NULL: a command ended). */
static int on_word(const struct distenv_launch_word *w, void *ctx)
{
	struct parse *ps = ctx;
	int rc = 0;

	if (!w) {
		if (ps->state == OPTIONS || ps->state == SCRIPT)
			rc = ps->kind != NONE ? judge(ps) : 0;
		ps->state = IDLE;
		ps->kind = NONE;
		ps->words = 0;
		return rc;
	}
	ps->words++;
	switch (ps->state) {
	case IDLE:
		idle_word(ps, w);
		break;
	case PYTHON:
		python_word(ps, w->text);
		break;
	case PYTHON_M:
		module_word(ps, w->text);
		break;
	case ACCEL:
		if (strcmp(w->text, "launch") == 0)
			start(ps, ACCELERATE);
		else
			ps->state = SCRIPT;
		break;
	case OPTIONS:
		options_word(ps, w);
		break;
	case SCRIPT:
		break;
	}
	return 0;
}

int distenv_launch_line_check(int argc, char *const *argv,
			      const struct distenv_launch_facts *f,
			      struct distenv_error *err,
			      struct distenv_error *warn)
{
	struct parse ps;

	distenv_error_clear(warn);
	if (!f || f->nnodes <= 1)
		return 0;
	memset(&ps, 0, sizeof(ps));
	ps.f = f;
	ps.err = err;
	ps.warn = warn;
	ps.state = IDLE;
	ps.kind = NONE;
	return distenv_launch_words(argc, argv, on_word, &ps) ? -1 : 0;
}

int distenv_launch_check_task(int check, const struct distenv_step *step,
			      struct distenv_vars *vars, int argc,
			      char *const *argv, struct distenv_error *err)
{
	struct distenv_launch_facts f;
	struct distenv_error warn;
	const char *backend;

	if (check == DISTENV_CHECK_OFF || step->kind == DISTENV_STEP_BATCH)
		return 0;
	memset(&f, 0, sizeof(f));
	f.nnodes = step->nnodes;
	f.node_id = step->node_id;
	f.master_node_id = step->master_node_id;
	f.node_name = step->node_name;
	f.master_host = step->master_host[0] ? step->master_host : NULL;
	f.master_addr = distenv_vars_value(vars, "MASTER_ADDR");
	f.nproc = distenv_vars_value(vars, "NPROC_PER_NODE");
	backend = distenv_vars_value(vars, "PET_RDZV_BACKEND");
	f.rdzv_backend =
		backend ? backend :
			  distenv_env_get(step->envp, "PET_RDZV_BACKEND");
	if (distenv_launch_line_check(argc, argv, &f, err, &warn))
		return -1;
	if (!distenv_error_is_set(&warn))
		return 0;
	if (check == DISTENV_CHECK_STRICT) {
		*err = warn;
		return -1;
	}
	distenv_vars_warn(vars, &warn);
	return 0;
}
