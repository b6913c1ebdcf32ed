/* Unit tests: a step's command that names the original training YAML
 * instead of "$DISTENV_LF_CONFIG". */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <string.h>
#include <cmocka.h>

#include "lf_argv.h"

static int never_same(const char *a, const char *b)
{
	(void)a;
	(void)b;
	return 0;
}

static int names(int argc, char *const *argv, const char *config,
		 char *word)
{
	return lf_argv_names_original(argc, argv, config, NULL, word, 256);
}

static void plain_command_names_the_original(void **state)
{
	char *argv[] = {"llamafactory-cli", "train", "dpo.yaml", NULL};
	char word[256];

	(void)state;
	assert_int_equal(names(3, argv, "dpo.yaml", word), 1);
	assert_string_equal(word, "dpo.yaml");
	/* the option gave a path, the command another spelling of it */
	assert_int_equal(names(3, argv, "/home/u/run/dpo.yaml", word), 1);
}

static void bash_c_is_looked_into(void **state)
{
	char *argv[] = {"bash", "-c", "exec llamafactory-cli train './cfg/dpo.yaml'",
			NULL};
	char word[256];

	(void)state;
	assert_int_equal(names(3, argv, "cfg/dpo.yaml", word), 1);
	assert_string_equal(word, "./cfg/dpo.yaml");
}

static void the_copy_is_fine(void **state)
{
	char *argv[] = {"bash", "-c",
			"exec llamafactory-cli train \"$DISTENV_LF_CONFIG\"", NULL};
	char *other[] = {"llamafactory-cli", "train", "sft.yaml", NULL};
	char *prog[] = {"dpo.yaml", NULL};
	char word[256];

	(void)state;
	assert_int_equal(names(3, argv, "dpo.yaml", word), 0);
	assert_int_equal(names(3, other, "dpo.yaml", word), 0);
	/* argv[0] is the program, not an argument */
	assert_int_equal(names(1, prog, "dpo.yaml", word), 0);
}

/* Same last component, another file: same_file says no. */
static void same_name_other_file(void **state)
{
	char *argv[] = {"llamafactory-cli", "train", "old/dpo.yaml", NULL};
	char word[256];

	(void)state;
	assert_int_equal(lf_argv_names_original(3, argv, "new/dpo.yaml",
						never_same, word,
						sizeof(word)), 0);
	assert_int_equal(lf_argv_names_original(3, argv, "old/dpo.yaml",
						never_same, word,
						sizeof(word)), 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(plain_command_names_the_original),
		cmocka_unit_test(bash_c_is_looked_into),
		cmocka_unit_test(the_copy_is_fine),
		cmocka_unit_test(same_name_other_file),
	};

	return cmocka_run_group_tests_name("lf_argv", tests, NULL, NULL);
}
