/*
 * cmd_options.c: the options of a subcommand, read and explained from
 * the rows of the option table (distenv_option_table.h) that name it:
 * its getopt_long(3) array, its usage line and its --help; and the one
 * way a subcommand prints an error (cmd_options.h).
 */
#include "cmd_options.h"

#include <stdio.h>
#include <string.h>

/* getopt_long returns this plus the row id for a long option, above
 * every character a short option could be. */
#define LONG_VAL_BASE 0x100

/* Columns of --help and of wrapped usage lines. */
#define LINE_WIDTH 79
#define OPTION_COLUMN 26

static int takes(const struct distenv_command *cmd,
		 const struct distenv_option_row *row)
{
	return row->command_name && (row->commands & cmd->in);
}

void distenv_cmd_options_begin(struct distenv_cmd_options *o,
			       const struct distenv_command *cmd)
{
	size_t i, n = 0, s = 0;

	memset(o, 0, sizeof(*o));
	o->cmd = cmd;
	/* A leading ':' makes getopt_long tell a missing value (':') from
	 * an unknown option ('?'), getopt(3). */
	o->shortopts[s++] = ':';
	for (i = 0; i < DISTENV_OPT_COUNT; i++) {
		const struct distenv_option_row *row = &distenv_option_table[i];

		if (!takes(o->cmd, row))
			continue;
		o->longopts[n].name = row->command_name;
		o->longopts[n].has_arg = row->has_arg;
		o->longopts[n].val = LONG_VAL_BASE + (int) i;
		n++;
		if (row->letter && s + 2 < sizeof(o->shortopts)) {
			o->shortopts[s++] = row->letter;
			if (row->has_arg)
				o->shortopts[s++] = ':';
		}
	}
	snprintf(o->fix, sizeof(o->fix), "see distenv %s --help", o->cmd->name);
	optind = 1;
	opterr = 0;
}

static int letter_row(const struct distenv_command *cmd, int c)
{
	size_t i;

	for (i = 0; i < DISTENV_OPT_COUNT; i++)
		if (distenv_option_table[i].letter == c &&
		    takes(cmd, &distenv_option_table[i]))
			return (int) i;
	return -1;
}

/* '--json=1' is refused as an unknown option; say what it is. */
static int is_flag_with_value(const struct distenv_command *cmd,
			      const char *arg)
{
	const char *eq = strchr(arg, '=');
	size_t i;

	if (strncmp(arg, "--", 2) || !eq)
		return 0;
	for (i = 0; i < DISTENV_OPT_COUNT; i++) {
		const struct distenv_option_row *row = &distenv_option_table[i];

		if (takes(cmd, row) && !row->has_arg &&
		    strlen(row->command_name) == (size_t) (eq - arg - 2) &&
		    !strncmp(row->command_name, arg + 2,
			     (size_t) (eq - arg - 2)))
			return 1;
	}
	return 0;
}

static void print_help(const struct distenv_command *cmd);

int distenv_cmd_option(struct distenv_cmd_options *o, int argc, char **argv,
		       const char **value, struct distenv_error *err)
{
	int c = getopt_long(argc, argv, o->shortopts, o->longopts, NULL);
	int id;
	const char *given = optind > 1 ? argv[optind - 1] : "";

	*value = NULL;
	if (c == -1)
		return DISTENV_CMD_OPTIONS_END;
	if (c == ':') {
		distenv_error_set(err, given, o->fix, "needs a value");
		return DISTENV_CMD_OPTIONS_BAD;
	}
	id = c >= LONG_VAL_BASE ? c - LONG_VAL_BASE : letter_row(o->cmd, c);
	if (c == '?' || id < 0) {
		distenv_error_set(err, given, o->fix,
				  is_flag_with_value(o->cmd, given) ?
					  "takes no value" :
					  "unknown option");
		return DISTENV_CMD_OPTIONS_BAD;
	}
	if (id == DISTENV_OPT_HELP) {
		print_help(o->cmd);
		return DISTENV_CMD_OPTIONS_HELP;
	}
	snprintf(o->where, sizeof(o->where), "--%s",
		 distenv_option_table[id].command_name);
	*value = optarg;
	return id;
}

int distenv_cmd_fail(const struct distenv_error *err)
{
	char line[3 * DISTENV_ERROR_TEXT];

	distenv_error_format(err, line, sizeof(line));
	fprintf(stderr, "distenv: error: %s\n", line);
	return 1;
}

int distenv_cmd_usage_error(const struct distenv_error *err)
{
	distenv_cmd_fail(err);
	return 2;
}

int distenv_cmd_options_end(const struct distenv_cmd_options *o, int code,
			    int argc, char **argv, int min, int max,
			    struct distenv_error *err)
{
	char cmd[64];

	if (code == DISTENV_CMD_OPTIONS_HELP)
		return 0;
	if (code != DISTENV_CMD_OPTIONS_END)
		return distenv_cmd_usage_error(err);
	snprintf(cmd, sizeof(cmd), "distenv %s", o->cmd->name);
	if (argc - optind > max) {
		distenv_error_set(err, argv[optind + max], o->fix,
				  "unexpected argument");
		return distenv_cmd_usage_error(err);
	}
	if (argc - optind < min) {
		distenv_error_set(err, cmd, o->fix, "give %s",
				  o->cmd->operands);
		return distenv_cmd_usage_error(err);
	}
	return -1;
}

/* Print word to out at column *col after a blank, or at the start of a
 * new line indented to indent when it would pass LINE_WIDTH (at column
 * indent itself, the start of a line, without the blank). */
static void put_word(FILE *out, const char *word, int indent, int *col)
{
	int len = (int) strlen(word);

	if (*col != indent && *col + 1 + len > LINE_WIDTH) {
		fprintf(out, "\n%*s", indent, "");
		*col = indent;
	} else if (*col != indent) {
		fputc(' ', out);
		(*col)++;
	}
	fputs(word, out);
	*col += len;
}

/* "--port PORT", "-h, --help" */
static void option_text(const struct distenv_option_row *row, char *buf,
			size_t len)
{
	char letter[8] = "";

	if (row->letter)
		snprintf(letter, sizeof(letter), "-%c, ", row->letter);
	snprintf(buf, len, "%s--%s%s%s", letter, row->command_name,
		 row->arg ? " " : "", row->arg ? row->arg : "");
}

void distenv_cmd_print_usage(FILE *out, const char *lead,
			     const struct distenv_command *cmd)
{
	char word[128];
	/* continuation lines start under the first operand */
	int indent = (int) strlen(lead) + 10 + (int) strlen(cmd->name);
	int col;
	size_t i;

	col = fprintf(out, "%s distenv %s", lead, cmd->name);
	if (cmd->operands[0])
		put_word(out, cmd->operands, indent, &col);
	if (cmd->needs >= 0) {
		snprintf(word, sizeof(word), "--%s %s",
			 distenv_option_table[cmd->needs].command_name,
			 distenv_option_table[cmd->needs].arg);
		put_word(out, word, indent, &col);
	}
	for (i = 0; i < DISTENV_OPT_COUNT; i++) {
		const struct distenv_option_row *row = &distenv_option_table[i];

		if (!takes(cmd, row) || (int) i == cmd->needs ||
		    i == DISTENV_OPT_HELP)
			continue;
		snprintf(word, sizeof(word), "[--%s%s%s]", row->command_name,
			 row->arg ? " " : "", row->arg ? row->arg : "");
		put_word(out, word, indent, &col);
	}
	fputc('\n', out);
}

/* The summary, or a usage text, wrapped from column indent on. */
static void print_wrapped(const char *text, int indent, int col)
{
	char word[128];

	while (*text) {
		size_t len = strcspn(text, " ");

		if (len >= sizeof(word))
			len = sizeof(word) - 1;
		memcpy(word, text, len);
		word[len] = '\0';
		put_word(stdout, word, indent, &col);
		text += len;
		text += strspn(text, " ");
	}
	putchar('\n');
}

static void print_help(const struct distenv_command *cmd)
{
	char opt[128];
	size_t i;

	distenv_cmd_print_usage(stdout, "usage:", cmd);
	putchar('\n');
	print_wrapped(cmd->summary, 0, 0);
	printf("\noptions:\n");
	for (i = 0; i < DISTENV_OPT_COUNT; i++) {
		const struct distenv_option_row *row = &distenv_option_table[i];
		int col;

		if (!takes(cmd, row))
			continue;
		option_text(row, opt, sizeof(opt));
		col = printf("  %s", opt);
		if (col < OPTION_COLUMN - 1)
			col += printf("%*s", OPTION_COLUMN - col, "");
		else
			col = LINE_WIDTH; /* the text on the next line */
		print_wrapped(row->usage, OPTION_COLUMN, col);
	}
}
