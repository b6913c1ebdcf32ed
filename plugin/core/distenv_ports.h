/*
 * distenv_ports.h: MASTER_PORT.
 *
 * Order:
 * 1. the first port of SLURM_STEP_RESV_PORTS: Slurm reserved it for this
 *    step on every node of the step and gives no two running steps the
 *    same one (slurm.conf(5) MpiParams=ports; srun(1) --resv-ports);
 * 2. --distenv-port;
 * 3. a port derived from job id and step id inside the plugstack
 *    port_range, outside the kernel's ephemeral range
 *    (/proc/sys/net/ipv4/ip_local_port_range, ip-sysctl.rst), where
 *    outgoing connections take their source ports, so a listener there
 *    can find its port taken. The same on every node of the step (it
 *    depends only on the ids), and different for steps of the same job
 *    whose step ids differ by less than the size of the range.
 */
#ifndef DISTENV_PORTS_H
#define DISTENV_PORTS_H

#include <stdint.h>

#include "distenv_error.h"

/*
 * The first port of a SLURM_STEP_RESV_PORTS value: "20000-20002",
 * "20000,20005-20006" or "20000". The whole value is checked (ports
 * 1-65535, ranges LO-HI with LO <= HI). Errors name the variable.
 */
int distenv_resv_ports_first(const char *value, uint16_t *port,
			     struct distenv_error *err);

/*
 * The port at index idx (0 first) of a SLURM_STEP_RESV_PORTS value, its
 * ranges counted in order ("21000-21001" has 21001 at index 1). Returns
 * 0, 1 when the value holds idx ports or fewer, -1 when it is malformed
 * (distenv_resv_ports_first names it).
 */
int distenv_resv_ports_nth(const char *value, uint32_t idx, uint16_t *port);

/*
 * The ephemeral range as /proc/sys/net/ipv4/ip_local_port_range holds it:
 * two numbers separated by blanks ("32768\t60999\n").
 */
int distenv_parse_ephemeral(const char *text, uint16_t *lo, uint16_t *hi,
			    struct distenv_error *err);

/*
 * The derived port for (job_id, step_id) in [lo, hi] without
 * [eph_lo, eph_hi] (pass eph_lo > eph_hi for "no ephemeral range").
 * Error: every port of the range is ephemeral.
 */
int distenv_derive_port(uint32_t job_id, uint32_t step_id, uint16_t lo,
			uint16_t hi, uint16_t eph_lo, uint16_t eph_hi,
			uint16_t *port, struct distenv_error *err);

#endif
