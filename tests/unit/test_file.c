/* Unit tests: distenv_file_read, the one reader of whole files, on real
 * files, links, FIFOs, directories, devices and /proc files. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <errno.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include "distenv_sys.h"
#include "distenv_sys_file.h"
#include "tmpdir_fixture.h"

static struct distenv_file file;
static struct distenv_error err;
static struct distenv_file_rules rules = {
	.name = "the test file",
	.fix = "name another file",
	.max = 1 << 20,
};

static int read_file(const char *p)
{
	distenv_error_clear(&err);
	return distenv_file_read(p, &rules, &file, &err);
}

/* A refusal leaves nothing to free and says where. */
static void assert_refused(int rc, const char *p, int errnum)
{
	assert_int_equal(rc, -1);
	assert_int_equal(file.errnum, errnum);
	assert_null(file.data);
	assert_int_equal(file.len, 0);
	assert_string_equal(err.where, p);
}

static int setup(void **state)
{
	(void)state;
	tmpdir_make("distenv-file");
	rules.max = 1 << 20;
	rules.owner = DISTENV_FILE_ANY_OWNER;
	return 0;
}

static int teardown(void **state)
{
	const char *const names[] = {"plain", "empty", "link", "fifo", "sub",
				     "owned", NULL};

	(void)state;
	tmpdir_remove(names);
	distenv_file_free(&file);
	return 0;
}

/* 10,000 bytes with a NUL inside come back whole, NUL-ended. */
static void regular_file_read_whole(void **state)
{
	char data[10000];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(data); i++)
		data[i] = (char)('a' + i % 26);
	data[5000] = '\0';
	write_bytes("plain", data, sizeof(data), 0644);
	assert_int_equal(read_file(in_dir("plain")), 0);
	assert_int_equal(file.len, sizeof(data));
	assert_memory_equal(file.data, data, sizeof(data));
	assert_int_equal(file.data[file.len], '\0');
	assert_int_equal(file.errnum, 0);
}

/* max is a number of bytes: a file of exactly max is read, one byte
 * more is refused before any byte is read, with the size and the cap. */
static void oversize_file_refused(void **state)
{
	(void)state;
	write_file("plain", "0123456789", 0644);
	rules.max = 10;
	assert_int_equal(read_file(in_dir("plain")), 0);
	assert_int_equal(file.len, 10);
	assert_string_equal(file.data, "0123456789");
	distenv_file_free(&file);
	rules.max = 9;
	assert_refused(read_file(in_dir("plain")), in_dir("plain"), EFBIG);
	assert_string_equal(err.what,
			    "refused: 10 bytes, over the cap of 9 bytes");
	assert_string_equal(err.fix, "name a file of at most 9 bytes");
}

static void empty_file(void **state)
{
	(void)state;
	write_file("empty", "", 0644);
	assert_int_equal(read_file(in_dir("empty")), 0);
	assert_int_equal(file.len, 0);
	assert_non_null(file.data);
	assert_string_equal(file.data, "");
}

static volatile sig_atomic_t alarmed;

static void on_alarm(int sig)
{
	(void)sig;
	alarmed = 1;
}

/* A FIFO with no writer: a blocking open would wait forever (fifo(7)).
 * The alarm, set without SA_RESTART, makes such an open fail with EINTR
 * after 5 s (signal(7)), so a reader that blocks fails this test instead
 * of hanging it. */
static void fifo_refused_at_once(void **state)
{
	struct sigaction sa, old;

	(void)state;
	assert_int_equal(mkfifo(in_dir("fifo"), 0644), 0);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	assert_int_equal(sigaction(SIGALRM, &sa, &old), 0);
	alarmed = 0;
	alarm(5);
	assert_refused(read_file(in_dir("fifo")), in_dir("fifo"), EINVAL);
	alarm(0);
	sigaction(SIGALRM, &old, NULL);
	assert_int_equal(alarmed, 0);
	assert_string_equal(err.what, "refused: not a regular file");
	assert_string_equal(err.fix, "name a regular file, not a FIFO");
}

/* The link is refused, not followed, though its target is readable. */
static void symlink_refused(void **state)
{
	(void)state;
	write_file("plain", "x", 0644);
	make_link("plain", "link");
	assert_refused(read_file(in_dir("link")), in_dir("link"), ELOOP);
	assert_string_equal(err.what,
			    "cannot open the test file: it is a symbolic link");
	assert_string_equal(err.fix, "name the file itself, not a symbolic link");
}

static void directory_and_device_refused(void **state)
{
	(void)state;
	assert_int_equal(mkdir(in_dir("sub"), 0755), 0);
	assert_refused(read_file(in_dir("sub")), in_dir("sub"), EINVAL);
	assert_string_equal(err.what, "refused: not a regular file");
	assert_string_equal(err.fix, "name a regular file, not a directory");
	assert_refused(read_file("/dev/null"), "/dev/null", EINVAL);
	assert_string_equal(err.fix, "name a regular file, not a device");
}

static void missing_file(void **state)
{
	(void)state;
	assert_refused(read_file(in_dir("none")), in_dir("none"), ENOENT);
	assert_string_equal(err.what, "cannot open the test file: No such file "
				      "or directory");
	assert_string_equal(err.fix, "name another file");
}

/* The bytes stdio reads from p, to compare with. */
static size_t stdio_read(const char *p, char *buf, size_t len)
{
	FILE *f = fopen(p, "re");
	size_t n;

	assert_non_null(f);
	n = fread(buf, 1, len, f);
	fclose(f);
	return n;
}

/* /proc files report st_size 0 (the first assert): read to the end all
 * the same, and past max refused. */
static void proc_file_read_to_end(void **state)
{
	struct stat st;
	char want[64];
	size_t n;

	(void)state;
	assert_int_equal(stat(DISTENV_EPHEMERAL_FILE, &st), 0);
	assert_int_equal(st.st_size, 0);
	n = stdio_read(DISTENV_EPHEMERAL_FILE, want, sizeof(want));
	assert_true(n > 2);
	assert_int_equal(read_file(DISTENV_EPHEMERAL_FILE), 0);
	assert_int_equal(file.len, n);
	assert_memory_equal(file.data, want, n);
	distenv_file_free(&file);
	rules.max = 2;
	assert_refused(read_file(DISTENV_EPHEMERAL_FILE),
		       DISTENV_EPHEMERAL_FILE, EFBIG);
	assert_string_equal(err.what, "refused: more than the cap of 2 bytes");
}

/* A /proc file longer than the first 4096 bytes asked of it (the buffer
 * grows): /proc/crypto lists the kernel's algorithms, 10 KiB and more. */
static void long_proc_file_read_to_end(void **state)
{
	static char want[1 << 20];
	size_t n;

	(void)state;
	if (access("/proc/crypto", R_OK))
		skip();
	n = stdio_read("/proc/crypto", want, sizeof(want));
	if (n <= 4096)
		skip();
	assert_int_equal(read_file("/proc/crypto"), 0);
	assert_int_equal(file.len, n);
	assert_memory_equal(file.data, want, n);
}

/* The owner rules: group-writable is refused for a root-owned file;
 * another owner is refused unless it is the caller and the rule says so. */
static void owner_checked(void **state)
{
	char want[64];

	(void)state;
	rules.owner = DISTENV_FILE_ROOT_OR_SELF;
	write_file("owned", "x", 0664);
	assert_refused(read_file(in_dir("owned")), in_dir("owned"), EPERM);
	assert_string_equal(err.what, "refused: mode 0664 lets its group write it");
	assert_int_equal(chmod(tmp_path, 0644), 0);
	assert_int_equal(read_file(in_dir("owned")), 0);
	assert_string_equal(file.data, "x");
	distenv_file_free(&file);
	if (geteuid() == 0) /* only root can give a file away */
		assert_int_equal(chown(tmp_path, 65534, 65534), 0);
	else
		rules.owner = DISTENV_FILE_ROOT;
	snprintf(want, sizeof(want), "refused: owned by uid %u, not root",
		 geteuid() == 0 ? 65534u : (unsigned)geteuid());
	assert_refused(read_file(in_dir("owned")), in_dir("owned"), EPERM);
	assert_string_equal(err.what, want);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(regular_file_read_whole, setup,
						teardown),
		cmocka_unit_test_setup_teardown(oversize_file_refused, setup,
						teardown),
		cmocka_unit_test_setup_teardown(empty_file, setup, teardown),
		cmocka_unit_test_setup_teardown(fifo_refused_at_once, setup,
						teardown),
		cmocka_unit_test_setup_teardown(symlink_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(directory_and_device_refused,
						setup, teardown),
		cmocka_unit_test_setup_teardown(missing_file, setup, teardown),
		cmocka_unit_test_setup_teardown(proc_file_read_to_end, setup,
						teardown),
		cmocka_unit_test_setup_teardown(long_proc_file_read_to_end,
						setup, teardown),
		cmocka_unit_test_setup_teardown(owner_checked, setup, teardown),
	};

	return cmocka_run_group_tests_name("file", tests, NULL, NULL);
}
