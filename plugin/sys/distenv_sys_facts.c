/* distenv_sys_facts.c: this node's facts for the rehearsal's check-in
 * (plugin/core/distenv_rehearsal_facts.h): the socket interface's MTU,
 * the selected HCA ports' active MTU from sysfs, and whether the task
 * can load the RDMA user-space library. */
#include "distenv_sys_rehearsal.h"

#include <dirent.h>
#include <dlfcn.h>
#include <limits.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "distenv_hca.h"
#include "distenv_sys_file.h"

#define VERBS_LIB "libibverbs.so.1"
#define PORTS_MAX 64 /* ports read per HCA */

/* sysfs attributes report st_size 4096 whatever they hold. */
static const struct distenv_file_rules sysfs_rules = {
	.name = "a sysfs attribute",
	.max = 4096,
};

/* The first number in root/path (NULL root: the real one); 0 none. */
static unsigned long read_number(const char *root, const char *path)
{
	char full[PATH_MAX];
	struct distenv_file text;
	unsigned long v = 0;

	snprintf(full, sizeof(full), "%s%s", root ? root : "", path);
	if (distenv_file_read(full, &sysfs_rules, &text, NULL))
		return 0;
	if (sscanf(text.data, "%lu", &v) != 1)
		v = 0;
	distenv_file_free(&text);
	return v;
}

/* The MTU of ifname: SIOCGIFMTU (netdevice(7)) in this network
 * namespace, or root's class/net/IF/mtu in a test tree. */
static uint32_t socket_mtu(const char *root, const char *ifname)
{
	char path[PATH_MAX];
	struct ifreq ifr;
	int fd;
	uint32_t mtu = 0;

	if (root) {
		snprintf(path, sizeof(path), "/sys/class/net/%s/mtu", ifname);
		return (uint32_t) read_number(root, path);
	}
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return 0;
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	if (ioctl(fd, SIOCGIFMTU, &ifr) == 0 && ifr.ifr_mtu > 0)
		mtu = (uint32_t) ifr.ifr_mtu;
	close(fd);
	return mtu;
}

/* One port of dev: counted when hca selects it and it is ACTIVE (state
 * "4: ACTIVE"; NCCL skips the others). */
static void ib_port(const char *root, const char *hca, const char *dev,
		    int port, struct distenv_rehearsal_facts *f)
{
	char path[PATH_MAX];
	uint32_t mtu;

	if (distenv_hca_list_selects(hca, dev, port) != 1)
		return;
	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/ports/%d/state",
		 dev, port);
	if (read_number(root, path) != 4)
		return;
	snprintf(path, sizeof(path),
		 "/sys/class/infiniband/%s/ports/%d/active_mtu", dev, port);
	mtu = (uint32_t) read_number(root, path);
	if (!mtu)
		return;
	if (!f->ib_ports || mtu < f->ib_mtu_lo)
		f->ib_mtu_lo = mtu;
	if (mtu > f->ib_mtu_hi)
		f->ib_mtu_hi = mtu;
	f->ib_ports++;
}

static int is_number(const char *s)
{
	return *s && strspn(s, "0123456789") == strlen(s);
}

/* Every HCA in root's /sys/class/infiniband, every port of it. */
static void ib_ports(const char *root, const char *hca,
		     struct distenv_rehearsal_facts *f)
{
	char path[PATH_MAX];
	DIR *d, *pd;
	struct dirent *e, *pe;

	snprintf(path, sizeof(path), "%s/sys/class/infiniband",
		 root ? root : "");
	d = opendir(path);
	if (!d)
		return;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/sys/class/infiniband/%s/ports",
			 root ? root : "", e->d_name);
		pd = opendir(path);
		if (!pd)
			continue;
		while ((pe = readdir(pd)))
			if (is_number(pe->d_name) &&
			    atoi(pe->d_name) <= PORTS_MAX)
				ib_port(root, hca, e->d_name, atoi(pe->d_name),
					f);
		closedir(pd);
	}
	closedir(d);
}

/* Whether the task loads lib (dlopen(3) in its own mount namespace, so
 * a container's file system): 1, or 0 when the file is not there. A
 * library that is there but does not load into slurmstepd's process
 * (another C library's symbol versions) says nothing of the task's
 * programs: -1. */
static int verbs_loads(const char *lib)
{
	void *h = dlopen(lib, RTLD_LAZY | RTLD_LOCAL);
	const char *why;

	if (h) {
		dlclose(h);
		return 1;
	}
	why = dlerror();
	return why && strstr(why, "No such file") ? 0 : -1;
}

void distenv_sys_rehearsal_facts(const struct distenv_facts_source *src,
				 struct distenv_rehearsal_facts *f)
{
	size_t n = src->ifname ? strcspn(src->ifname, ",") : 0;

	distenv_rehearsal_facts_init(f);
	f->eph_lo = src->eph_lo;
	f->eph_hi = src->eph_hi;
	if (n && n < sizeof(f->ifname) && src->ifname[0] != '^' &&
	    src->ifname[0] != '=') {
		memcpy(f->ifname, src->ifname, n);
		f->ifname[n] = '\0';
		f->mtu = socket_mtu(src->root, f->ifname);
	}
	if (src->ib_disabled)
		return;
	ib_ports(src->root, src->hca, f);
	if (f->ib_ports)
		f->verbs = verbs_loads(src->verbs_lib ? src->verbs_lib :
							VERBS_LIB);
}
