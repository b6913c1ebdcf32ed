/* plan_stack.c: the LLaMA-Factory and transformers versions and what
 * they change in the plan (rules in plan_stack.h). */
#include "plan_stack.h"

#include <string.h>

/* digits into *n (at most 5); returns the characters read, 0 none */
static size_t number(const char *p, uint32_t *n)
{
	size_t i = 0;

	*n = 0;
	while (p[i] >= '0' && p[i] <= '9' && i < 6)
		*n = *n * 10 + (uint32_t) (p[i++] - '0');
	return i <= 5 ? i : 0;
}

/* A PEP 440 suffix: ([.]?(a|b|rc|dev|post)[digits])* [+local]. */
static int suffix_ok(const char *p)
{
	static const char *const tags[] = { "rc", "a", "b", "dev", "post" };
	uint32_t n;

	while (*p && *p != '+') {
		size_t i, len = 0;

		if (*p == '.')
			p++;
		for (i = 0; i < sizeof(tags) / sizeof(tags[0]); i++)
			if (!strncmp(p, tags[i], strlen(tags[i]))) {
				len = strlen(tags[i]);
				break;
			}
		if (!len)
			return 0;
		p += len;
		len = number(p, &n);
		if (!len && i < 3) /* rc, a and b carry a number */
			return 0;
		p += len;
	}
	if (*p == '+') {
		if (!*++p)
			return 0;
		for (; *p; p++)
			if (!((*p >= '0' && *p <= '9') ||
			      (*p >= 'a' && *p <= 'z') ||
			      (*p >= 'A' && *p <= 'Z') || *p == '.'))
				return 0;
	}
	return 1;
}

int plan_parse_version(const char *value, const char *where,
		       struct plan_version *out, struct distenv_error *err)
{
	const char *p = value;
	size_t len;

	memset(out, 0, sizeof(*out));
	if (value && !strcmp(value, "unknown"))
		return 0;
	if (!value || !value[0] || strlen(value) >= sizeof(out->text))
		goto bad;
	if (!(len = number(p, &out->major)) || p[len] != '.')
		goto bad;
	p += len + 1;
	if (!(len = number(p, &out->minor)))
		goto bad;
	p += len;
	if (*p == '.' && p[1] >= '0' && p[1] <= '9') {
		if (!(len = number(p + 1, &out->patch)))
			goto bad;
		p += len + 1;
	}
	if (!suffix_ok(p))
		goto bad;
	out->known = 1;
	strcpy(out->text, value);
	return 0;
bad:
	memset(out, 0, sizeof(*out));
	return distenv_error_set(err, where, NULL,
				 "'%.40s%s' is not a version: give it as pip "
				 "shows it, MAJOR.MINOR[.PATCH] (0.9.5, "
				 "4.46.1), or unknown",
				 value ? value : "",
				 value && strlen(value) > 40 ? "..." : "");
}

int plan_version_cmp(const struct plan_version *a, uint32_t major,
		     uint32_t minor, uint32_t patch)
{
	if (a->major != major)
		return a->major < major ? -1 : 1;
	if (a->minor != minor)
		return a->minor < minor ? -1 : 1;
	if (a->patch != patch)
		return a->patch < patch ? -1 : 1;
	return 0;
}

int plan_stack_model_ce(const struct plan_stack *s)
{
	/* LLaMA-Factory 0.8.0 to 0.9.3 pass the labels */
	if (s->lf.known && (plan_version_cmp(&s->lf, 0, 8, 0) < 0 ||
			    plan_version_cmp(&s->lf, 0, 9, 4) >= 0))
		return 0;
	/* transformers 4.46 to 4.48 keep the 16-bit logits through it */
	if (s->tf.known && (plan_version_cmp(&s->tf, 4, 46, 0) < 0 ||
			    plan_version_cmp(&s->tf, 4, 49, 0) >= 0))
		return 0;
	return 1;
}

int plan_stack_lf_sets_expandable(const struct plan_stack *s)
{
	return s->lf.known && plan_version_cmp(&s->lf, 0, 9, 3) >= 0;
}
