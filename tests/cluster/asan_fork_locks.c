/*
 * asan_fork_locks.c: makes malloc usable in the child of a multi-threaded
 * fork under GCC 12's ASan runtime, for tests/sanitize_cluster.sh only.
 *
 * Why: slurmstepd forks each task from a process that has I/O and message
 * threads, and the child allocates (env_array_copy, spank task_init)
 * before exec. GCC 12's libasan (Debian 12) installs no fork handlers, so
 * when another thread holds an allocator region lock at the fork, the
 * child waits on it forever. Seen here in about 1 step in 25 (a task
 * stuck in SizeClassAllocator64::GetFromAllocator under exec_task).
 * LLVM fixed this in compiler-rt 18 (llvm/llvm-project pull request
 * 75290, "[asan] Install pthread_atfork"): before fork, lock the thread
 * registry, the allocator and the stack depot; unlock them after, in the
 * parent and in the child. This file does the same from outside.
 *
 * Those functions are internal (local symbols of libasan.so.8, not
 * exported), so tests/sanitize_cluster.sh reads their offsets with nm and
 * passes them in at compile time, with the offset of the exported
 * __asan_init as a check that the runtime loaded is the file nm read;
 * if it is not, this library does nothing and says so on stderr.
 *
 * Preloaded after libasan (LD_PRELOAD="libasan.so.8 this.so"). Built
 * without sanitizers. Never installed, never part of distenv.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>

#ifndef OFF_ASAN_INIT
#error "build with -DOFF_ASAN_INIT=... and the other offsets (tests/sanitize_cluster.sh)"
#endif

typedef void (*lock_fn)(void);

static lock_fn lock_registry, unlock_registry, lock_allocator,
	unlock_allocator, lock_depot, unlock_depot;

static void before_fork(void)
{
	lock_registry();
	lock_allocator();
	lock_depot();
}

static void after_fork(void)
{
	unlock_depot();
	unlock_allocator();
	unlock_registry();
}

__attribute__((constructor)) static void install(void)
{
	void *init = dlsym(RTLD_DEFAULT, "__asan_init");
	Dl_info info;
	uintptr_t base;

	if (!init || !dladdr(init, &info) || !info.dli_fbase) {
		fputs("asan_fork_locks: no ASan runtime loaded; nothing done\n", stderr);
		return;
	}
	base = (uintptr_t)info.dli_fbase;
	if ((uintptr_t)init - base != (uintptr_t)OFF_ASAN_INIT) {
		fprintf(stderr,
			"asan_fork_locks: %s is not the runtime the offsets were read from; nothing done\n",
			info.dli_fname);
		return;
	}
	lock_registry = (lock_fn)(base + OFF_LOCK_REGISTRY);
	unlock_registry = (lock_fn)(base + OFF_UNLOCK_REGISTRY);
	lock_allocator = (lock_fn)(base + OFF_LOCK_ALLOCATOR);
	unlock_allocator = (lock_fn)(base + OFF_UNLOCK_ALLOCATOR);
	lock_depot = (lock_fn)(base + OFF_LOCK_DEPOT);
	unlock_depot = (lock_fn)(base + OFF_UNLOCK_DEPOT);
	pthread_atfork(before_fork, after_fork, after_fork);
}
