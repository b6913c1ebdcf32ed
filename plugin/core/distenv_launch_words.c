/* distenv_launch_words.c: a command line's words, as its shell splits
 * them (distenv_launch_int.h). */
#include "distenv_launch_int.h"

#include <string.h>

#define SCRIPT_DEPTH 3

struct stream {
	distenv_launch_word_fn fn;
	void *ctx;
	int shell_seen; /* a shell's name since the command began */
	int dash_c; /* the word before was the shell's -c */
};

/* A word being built: its text, cut at the end of the buffer. */
struct build {
	struct distenv_launch_word w;
	size_t len;
};

static void put(struct build *b, char c)
{
	if (b->len + 1 < sizeof(b->w.text))
		b->w.text[b->len++] = c;
	b->w.text[b->len] = '\0';
}

const char *distenv_launch_base(const char *word)
{
	const char *slash = strrchr(word, '/');

	return slash ? slash + 1 : word;
}

static int is_shell(const char *word)
{
	static const char *const shells[] = { "sh",  "bash", "dash",
					      "ksh", "zsh",  NULL };
	const char *base = distenv_launch_base(word);
	int i;

	for (i = 0; shells[i]; i++)
		if (strcmp(base, shells[i]) == 0)
			return 1;
	return 0;
}

/* -c, or a cluster of single-letter options with c among them: -lc */
static int is_dash_c(const char *word)
{
	size_t n = strlen(word);

	return n >= 2 && word[0] == '-' && word[1] != '-' &&
	       strspn(word + 1, "abcefhiklmnprstuvxBCEHPT") == n - 1 &&
	       strchr(word + 1, 'c');
}

/* An expansion from p ($..., `...`): copied as it is, literal 0.
 * Returns the first byte after it. */
static const char *expansion(const char *p, struct build *b)
{
	char open = p[1], close = open == '(' ? ')' : '}';
	int depth = 0;

	b->w.literal = 0;
	if (*p == '`') {
		put(b, *p++);
		while (*p && *p != '`')
			put(b, *p++);
		if (*p)
			put(b, *p++);
		return p;
	}
	put(b, *p++); /* $ */
	if (open != '(' && open != '{')
		return p;
	do {
		if (*p == open)
			depth++;
		else if (*p == close)
			depth--;
		put(b, *p++);
	} while (*p && depth > 0);
	return p;
}

/* One unquoted or double-quoted piece from p: a backslash and the byte
 * it escapes (every byte outside quotes, only $ ` " \ and newline inside
 * them, escaped: NULL), an expansion, or one byte. Returns its end. */
static const char *piece(const char *p, struct build *b, const char *escaped)
{
	if (*p == '\\' && p[1] && (!escaped || strchr(escaped, p[1]))) {
		if (p[1] != '\n')
			put(b, p[1]);
		return p + 2;
	}
	if (*p == '$' || *p == '`')
		return expansion(p, b);
	put(b, *p);
	return p + 1;
}

/* One word from p (not a blank, not a separator); returns its end. */
static const char *word(const char *p, struct build *b)
{
	while (*p && !strchr(" \t\n;&|()", *p)) {
		if (*p == '\'') {
			for (p++; *p && *p != '\''; p++)
				put(b, *p);
			if (*p)
				p++;
		} else if (*p == '"') {
			for (p++; *p && *p != '"';)
				p = piece(p, b, "$`\"\\\n");
			if (*p)
				p++;
		} else {
			p = piece(p, b, NULL);
		}
	}
	return p;
}

static int feed(struct stream *s, const char *text, int literal, int depth);

static int end_command(struct stream *s)
{
	s->shell_seen = 0;
	s->dash_c = 0;
	return s->fn(NULL, s->ctx);
}

/* A shell's -c script: its words, each command ended. */
static int script(struct stream *s, const char *p, int depth)
{
	struct stream inner = { s->fn, s->ctx, 0, 0 };
	struct build b;
	int rc = end_command(&inner);

	while (!rc && *p) {
		if (*p == ' ' || *p == '\t' || (*p == '\\' && p[1] == '\n')) {
			p += *p == '\\' ? 2 : 1;
		} else if (*p == '#') {
			p += strcspn(p, "\n");
		} else if (strchr("\n;&|()", *p)) {
			p += strspn(p, "\n;&|()");
			rc = end_command(&inner);
		} else {
			memset(&b, 0, sizeof(b));
			b.w.literal = 1;
			p = word(p, &b);
			rc = feed(&inner, b.w.text, b.w.literal, depth);
		}
	}
	return rc ? rc : end_command(s);
}

static int feed(struct stream *s, const char *text, int literal, int depth)
{
	struct distenv_launch_word w;

	if (s->dash_c && depth < SCRIPT_DEPTH) {
		s->dash_c = 0;
		return script(s, text, depth + 1);
	}
	s->dash_c = s->shell_seen && is_dash_c(text);
	if (is_shell(text))
		s->shell_seen = 1;
	strncpy(w.text, text, sizeof(w.text) - 1);
	w.text[sizeof(w.text) - 1] = '\0';
	w.literal = literal;
	return s->fn(&w, s->ctx);
}

int distenv_launch_words(int argc, char *const *argv, distenv_launch_word_fn fn,
			 void *ctx)
{
	struct stream s = { fn, ctx, 0, 0 };
	int i, rc = 0;

	for (i = 0; !rc && argv && i < argc && argv[i]; i++)
		rc = feed(&s, argv[i], 1, 0);
	return rc ? rc : end_command(&s);
}
