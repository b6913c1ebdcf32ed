/* distenv_error.c: fill and render struct distenv_error. */
#include "distenv_error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static void copy_text(char *dst, const char *src)
{
	snprintf(dst, DISTENV_ERROR_TEXT, "%s", src ? src : "");
}

int distenv_error_set(struct distenv_error *err, const char *where,
		      const char *fix, const char *what_fmt, ...)
{
	va_list ap;

	if (!err)
		return -1;
	va_start(ap, what_fmt);
	vsnprintf(err->what, sizeof(err->what), what_fmt, ap);
	va_end(ap);
	copy_text(err->where, where);
	copy_text(err->fix, fix);
	return -1;
}

void distenv_error_clear(struct distenv_error *err)
{
	if (err)
		memset(err, 0, sizeof(*err));
}

int distenv_error_is_set(const struct distenv_error *err)
{
	return err && err->what[0] != '\0';
}

void distenv_error_prefix_where(struct distenv_error *err, const char *prefix)
{
	char old[DISTENV_ERROR_TEXT];

	if (!err || !prefix || !prefix[0])
		return;
	copy_text(old, err->where);
	if (old[0])
		snprintf(err->where, sizeof(err->where), "%s: %s", prefix, old);
	else
		copy_text(err->where, prefix);
}

int distenv_error_format(const struct distenv_error *err, char *buf, size_t len)
{
	const char *where = err->where[0] ? err->where : NULL;
	const char *fix = err->fix[0] ? err->fix : NULL;

	/* The fix starts a sentence: capitalised, as its first word is
	 * usually a verb written in lower case ("use ...", "give ..."). */
	char first[2] = { 0, 0 };

	if (fix) {
		/* ... but "distenv" is a name, and stays as it is. */
		int name = strncmp(fix, "distenv", 7) == 0;

		first[0] = !name && fix[0] >= 'a' && fix[0] <= 'z' ?
				   (char) (fix[0] - 'a' + 'A') :
				   fix[0];
		fix++;
	}
	return snprintf(buf, len, "%s%s%s%s%s%s", where ? where : "",
			where ? ": " : "", err->what, first[0] ? ". " : "",
			first, fix ? fix : "");
}

const char *distenv_printable(const char *value, char *buf, size_t len)
{
	size_t i;

	if (!value)
		value = "";
	for (i = 0; value[i] && i + 1 < len; i++) {
		unsigned char c = (unsigned char) value[i];

		buf[i] = (c >= 0x20 && c < 0x7f) ? (char) c : '?';
	}
	buf[i] = '\0';
	if (value[i] && len >= 4)
		memcpy(buf + len - 4, "...", 4);
	return buf;
}
