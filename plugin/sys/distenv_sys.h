/*
 * distenv_sys.h: the adapters that gather a node's facts from the system
 * for the core: interfaces (getifaddrs(3)), the master's addresses
 * (getaddrinfo(3)) with the interface the kernel routes each through
 * (connect(2) on a UDP socket, which sends no packet), the kernel's
 * ephemeral port range, and the first host of a Slurm node list
 * (slurm_hostlist_* from libslurm, which srun, sbatch and slurmstepd have
 * loaded; the distenv command links libslurm).
 */
#ifndef DISTENV_SYS_H
#define DISTENV_SYS_H

#include <stddef.h>
#include <stdint.h>

#include "distenv_error.h"
#include "distenv_net.h"
#include "distenv_options.h"
#include "distenv_step.h"
#include "distenv_vars.h"

#define DISTENV_EPHEMERAL_FILE "/proc/sys/net/ipv4/ip_local_port_range"

/* A node's network facts with the storage behind them. */
struct distenv_net_facts {
	struct distenv_net net; /* what the core reads; points into below */
	struct distenv_iface *ifaces;
	struct distenv_addr *addrs;
	char host[256];
	char resolve_error[256];
};

/*
 * Gather interfaces and resolve host (the master's name or the user's
 * MASTER_ADDR). A resolver failure is not an error here: it is recorded
 * in facts->net.resolve_error for the core to report with context.
 * Errors: getifaddrs failed, out of memory. Free with
 * distenv_net_facts_free() in every case.
 */
int distenv_net_facts_gather(const char *host, struct distenv_net_facts *facts,
			     struct distenv_error *err);

void distenv_net_facts_free(struct distenv_net_facts *facts);

/*
 * The kernel's ephemeral port range; lo > hi (1, 0) when the file cannot
 * be read or parsed, which the port derivation takes as "no range".
 */
void distenv_sys_ephemeral(uint16_t *lo, uint16_t *hi);

/*
 * The first host of a Slurm node list ("gpu-[001-064]", "nb,na"), in the
 * list's own order (hostlist keeps it; Slurm lists steps in node index
 * order, docs/contracts.md 5). Only the first name is taken out, so
 * a list of 10,000 nodes is never expanded. Errors: empty or malformed
 * list, name longer than len - 1. where names the variable.
 */
int distenv_first_host(const char *nodelist, const char *where, char *buf,
		       size_t len, struct distenv_error *err);

/*
 * The name at index idx (0 first) of a Slurm node list, in the list's
 * own order, with distenv_first_host's checks; elements are expanded
 * one at a time and only up to idx. Errors: as distenv_first_host, and
 * a list with idx names or fewer.
 */
int distenv_nth_host(const char *nodelist, uint32_t idx, const char *where,
		     char *buf, size_t len, struct distenv_error *err);

/*
 * The node that holds task 0 (SLURM_PROCID 0) of step job_id.step_id:
 * its name into host and its node index into *node_id, from the step's
 * layout as slurmctld keeps it (slurm_job_step_layout_get, slurm.h; one
 * request to slurmctld, so called only when the task distribution can
 * move task 0 off node index 0: srun(1), --distribution=arbitrary,
 * "tasks laid out on the nodes in the order of the file" of
 * SLURM_HOSTFILE). Errors: slurmctld does not answer, or the layout has
 * no task 0; the fix names MASTER_ADDR.
 */
/*
 * The job's end by its time limit from slurmctld's record of the job
 * (slurm_load_job(3): end_time), epoch seconds; 0 when the job has no
 * time limit (time_limit INFINITE) or slurmctld does not answer. For
 * Slurm before 23.02, whose jobs have no SLURM_JOB_END_TIME
 * (distenv_job_end).
 */
long long distenv_sys_job_end(uint32_t job_id);

int distenv_task0_host(uint32_t job_id, uint32_t step_id, char *host,
		       size_t len, uint32_t *node_id,
		       struct distenv_error *err);

/*
 * The root directory this process sees, as device and inode of "/", into
 * *id (zeros when it cannot be read). distenv compares slurmstepd's (in
 * slurm_spank_init) with the task's (in task_init) to tell that a plugin
 * listed before it has moved the task into a container: setns(2) into
 * another mount namespace sets the caller's root to that namespace's
 * root, and a container's is its image (pyxis joins the container's
 * namespaces in its task_init). A private /tmp alone, as Slurm's
 * job_container/tmpfs gives a job, leaves "/" as it is, so it is not
 * taken for a container.
 */
struct distenv_root_id {
	unsigned long long dev, ino;
};

void distenv_root_id(struct distenv_root_id *id);

/*
 * A plugin that moves the task into a container in its task_init:
 * NVIDIA's pyxis, spank_pyxis.so (its README, "Installation"); path's
 * base name is compared. 1 or 0.
 */
int distenv_is_container_plugin(const char *path);

/*
 * Of the shared objects names[0..n) in load order, the index of the first
 * container plugin loaded after self (one of names), or -1: none, or self
 * not among them. Pure.
 */
long distenv_container_after(const char *const *names, size_t n,
			     const char *self);

/*
 * Whether Slurm loaded a container plugin after the object that holds
 * the address self (distenv.so): its path into name (len bytes) and 1,
 * else 0. Slurm loads the plugstack's plugins one line after the other
 * (src/common/plugstack.c, _spank_stack_load: a plugin's line is read,
 * its file dlopen(3)ed, then the next line), and the dynamic linker
 * lists the loaded objects in load order (dl_iterate_phdr(3)), so
 * "loaded after" is "listed after in plugstack.conf": its task_init then
 * runs after distenv's, and the task it moves into its container sees
 * what distenv wrote on the host only where the container mounts it.
 */
int distenv_container_plugin_after(const void *self, char *name, size_t len);

/*
 * Wait until the reader of the pipe fd (a task's stderr, which
 * slurmstepd forwards to srun) has read every byte written to it, polling
 * FIONREAD (pipe(7)) every 5 ms for at most max_ms milliseconds; then
 * sleep settle_ms more, so that the reader can pass the bytes on. For the
 * failure path of task_init (distenv_sys_drain.c says why).
 * Returns 1 when drained, 0 when max_ms passed first, -1 when fd is no
 * pipe (a file or a terminal: nothing to wait for; no sleep then).
 */
int distenv_pipe_wait_drained(int fd, int max_ms, int settle_ms);

/*
 * The CPUs this process may run on (sched_getaffinity(2); a task's
 * after Slurm's task plugin bound it: slurmstepd's exec_task runs the
 * task plugin's pre_launch before the SPANK task_init), their ids as a
 * list ("0-3,8", cut with "..." to fit len) into list. Returns the
 * count, 0 when it cannot be read. More than CPU_SETSIZE (1024) CPUs
 * reads as unknown.
 */
uint32_t distenv_sys_affinity(char *list, size_t len);

/*
 * The whole derivation for the task whose environment is envp, as both
 * the SPANK glue and the distenv command run it: step facts from envp
 * (batch as for distenv_step_from_env), the kernel's ephemeral range,
 * the first host of the step's node list (in tasks mode with an
 * arbitrary distribution the node of task 0, distenv_task0_host),
 * the network facts when needed, the task's CPUs (distenv_sys_affinity:
 * the calling process's), then distenv_derive(). step and vars
 * are filled; on error vars is empty. step->envp points to envp, which
 * must outlive step. With the node's topology (distenv_topo.h,
 * loaded once per step per node by the caller; NULL: none), a note on
 * it for --distenv-show (NULL or "": none), and step_gpus, the step's
 * SLURM_STEP_GPUS as user_init saw it (NULL: unknown; distenv_gpus.h),
 * and job_end, slurmctld's end of the job where the caller asked for it
 * (distenv_sys_job_end; 0: not asked). topo, topo_note and step_gpus must
 * outlive step.
 */
int distenv_derive_for_task_topo(const struct distenv_site *site,
				 const struct distenv_request *req,
				 const char *const *envp, int batch,
				 const struct distenv_topo *topo,
				 const char *topo_note, const char *step_gpus,
				 long long job_end, struct distenv_step *step,
				 struct distenv_vars *vars,
				 struct distenv_error *err);

#endif
