/*
 * The device as libibumad describes it (umad_ca_t, umad_port_t, the CA
 * names and device lists): rdma-core reads it from /sys/class/infiniband;
 * here the daemon answers UMAD_CA with the same values (node type, fw and
 * hw versions, GUIDs, and per port LID, LMC, SM LID and SL, state,
 * physical state, rate, capability mask, GID prefix and GUID of GID 0,
 * link layer, P_Keys). Every call asks afresh, as rdma-core reads sysfs
 * afresh.
 */
#include "sofumad.h"

#include "sof_client.h"
#include "sof_proto.h"

#include <errno.h>
#include <infiniband/umad.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int sofu_ca_at(uint32_t index, struct sof_umad_ca_rep *r)
{
	struct sof_umad_ca_req req = {.index = index};
	int fd = sof_client_connect(), err;

	if (fd < 0)
		return fd;
	err = sof_client_rpc(fd, SOF_OP_UMAD_CA, &req, sizeof(req), NULL, 0, r, sizeof(*r), NULL,
			     NULL);
	close(fd);
	if (!err && (r->nports == 0 || r->nports > SOF_UMAD_MAX_PORTS))
		err = -EPROTO;
	if (!err)
		r->name[sizeof(r->name) - 1] = '\0';
	return err;
}

static bool has_active(const struct sof_umad_ca_rep *r)
{
	for (uint32_t i = 0; i < r->nports; i++)
		if (r->ports[i].state == 4)
			return true;
	return false;
}

/* The CA named, or with none named the first with an active port (else
 * the first), as rdma-core resolves a CA name. */
int sofu_get_ca_info(const char *ca_name, struct sof_umad_ca_rep *r, uint32_t *index)
{
	struct sof_umad_ca_rep first;
	bool have_first = false;

	for (uint32_t i = 0; i < SOF_UMAD_MAX_CAS; i++) {
		if (sofu_ca_at(i, r))
			continue;
		if (ca_name ? !strncmp(ca_name, r->name, UMAD_CA_NAME_LEN) : has_active(r)) {
			if (index)
				*index = i;
			return 0;
		}
		if (!ca_name && !have_first) {
			first = *r;
			have_first = true;
			if (index)
				*index = i;
		}
	}
	if (!have_first)
		return -ENODEV;
	*r = first;
	return 0;
}

int sofu_resolve(const struct sof_umad_ca_rep *r, const char *ca_name, int *portnum)
{
	if (ca_name && strncmp(ca_name, r->name, UMAD_CA_NAME_LEN))
		return -ENODEV;
	if (*portnum < 0 || *portnum > (int)r->nports)
		return -EINVAL;
	if (*portnum == 0) {
		/* as rdma-core: the first active port, else the first */
		*portnum = 1;
		for (uint32_t i = 0; i < r->nports; i++) {
			if (r->ports[i].state == 4) {
				*portnum = (int)r->ports[i].portnum;
				break;
			}
		}
	}
	return 0;
}

static const struct sof_umad_port_info *port_info(const struct sof_umad_ca_rep *r, int portnum)
{
	for (uint32_t i = 0; i < r->nports; i++)
		if ((int)r->ports[i].portnum == portnum)
			return &r->ports[i];
	return NULL;
}

static int fill_port(const struct sof_umad_ca_rep *r, int portnum, umad_port_t *port)
{
	const struct sof_umad_port_info *p = port_info(r, portnum);
	uint32_t n;

	if (!p)
		return -EINVAL;
	memset(port, 0, sizeof(*port));
	snprintf(port->ca_name, sizeof(port->ca_name), "%s", r->name);
	port->portnum = portnum;
	port->base_lid = p->base_lid;
	port->lmc = p->lmc;
	port->sm_lid = p->sm_lid;
	port->sm_sl = p->sm_sl;
	port->state = p->state;
	port->phys_state = p->phys_state;
	port->rate = p->rate;
	port->capmask = htobe32(p->capmask);
	port->gid_prefix = p->gid_prefix;
	port->port_guid = p->port_guid;
	memcpy(port->link_layer, p->link_layer, sizeof(port->link_layer));
	port->link_layer[sizeof(port->link_layer) - 1] = '\0';
	n = p->npkeys > SOF_UMAD_MAX_PKEYS ? SOF_UMAD_MAX_PKEYS : p->npkeys;
	port->pkeys = calloc(n ? n : 1, sizeof(*port->pkeys));
	if (!port->pkeys)
		return -ENOMEM;
	memcpy(port->pkeys, p->pkeys, n * sizeof(*port->pkeys));
	port->pkeys_size = n;
	return 0;
}

SOFU_EXPORT int umad_get_cas_names(char cas[][UMAD_CA_NAME_LEN], int max)
{
	struct sof_umad_ca_rep r;
	int n = 0;

	for (uint32_t i = 0; i < SOF_UMAD_MAX_CAS && n < max; i++)
		if (!sofu_ca_at(i, &r))
			snprintf(cas[n++], UMAD_CA_NAME_LEN, "%s", r.name);
	return n;
}

SOFU_EXPORT int umad_get_ca_portguids(const char *ca_name, __be64 *portguids, int max)
{
	struct sof_umad_ca_rep r;
	int port = 0, n;

	if (sofu_get_ca_info(ca_name, &r, NULL) || sofu_resolve(&r, ca_name, &port))
		return -ENODEV;
	n = (int)r.nports + 1;
	if (!portguids)
		return n;
	if (n > max)
		return -ENOMEM;
	portguids[0] = 0; /* a CA has no port 0 */
	for (int i = 1; i < n; i++) {
		const struct sof_umad_port_info *p = port_info(&r, i);

		portguids[i] = p ? p->port_guid : 0;
	}
	return n;
}

SOFU_EXPORT int umad_release_port(umad_port_t *port)
{
	if (!port)
		return -ENODEV;
	free(port->pkeys);
	port->pkeys = NULL;
	port->pkeys_size = 0;
	return 0;
}

SOFU_EXPORT int umad_release_ca(umad_ca_t *ca)
{
	if (!ca)
		return -ENODEV;
	for (int i = 0; i < UMAD_CA_MAX_PORTS; i++) {
		if (!ca->ports[i])
			continue;
		umad_release_port(ca->ports[i]);
		free(ca->ports[i]);
		ca->ports[i] = NULL;
	}
	return 0;
}

SOFU_EXPORT int umad_get_ca(const char *ca_name, umad_ca_t *ca)
{
	struct sof_umad_ca_rep r;
	int port = 0, err;

	if (!ca)
		return -EINVAL;
	err = sofu_get_ca_info(ca_name, &r, NULL);
	if (err)
		return -ENODEV;
	err = sofu_resolve(&r, ca_name, &port);
	if (err)
		return err;
	memset(ca, 0, sizeof(*ca));
	snprintf(ca->ca_name, sizeof(ca->ca_name), "%s", r.name);
	ca->node_type = r.node_type;
	snprintf(ca->fw_ver, sizeof(ca->fw_ver), "%.19s", r.fw_ver);
	snprintf(ca->ca_type, sizeof(ca->ca_type), "%.39s", r.ca_type);
	snprintf(ca->hw_ver, sizeof(ca->hw_ver), "%.19s", r.hw_ver);
	ca->node_guid = r.node_guid;
	ca->system_guid = r.sys_guid;
	for (uint32_t i = 0; i < r.nports; i++) {
		int n = (int)r.ports[i].portnum;

		if (n <= 0 || n >= UMAD_CA_MAX_PORTS || ca->ports[n])
			continue;
		ca->ports[n] = calloc(1, sizeof(*ca->ports[n]));
		if (!ca->ports[n] || fill_port(&r, n, ca->ports[n])) {
			free(ca->ports[n]);
			ca->ports[n] = NULL;
			umad_release_ca(ca);
			return -ENOMEM;
		}
		if (n > ca->numports)
			ca->numports = n;
	}
	return 0;
}

SOFU_EXPORT int umad_get_port(const char *ca_name, int portnum, umad_port_t *port)
{
	struct sof_umad_ca_rep r;
	int err;

	if (!port)
		return -EINVAL;
	err = sofu_get_ca_info(ca_name, &r, NULL);
	if (err)
		return -ENODEV;
	err = sofu_resolve(&r, ca_name, &portnum);
	if (err)
		return err;
	return fill_port(&r, portnum, port);
}

/* N of the umadN whose ibdev and port are ca and portnum, as rdma-core's
 * dev_to_umad_id reads them from sysfs (`softofed run` writes them for
 * sof0 and sofib0); -1 when none says so. */
static int umad_id_of(const char *ca, int portnum)
{
	char p[128], buf[64];
	int port;

	for (int n = 0; n < 64; n++) {
		FILE *f;
		bool same;

		snprintf(p, sizeof(p), "/sys/class/infiniband_mad/umad%d/ibdev", n);
		f = fopen(p, "re");
		if (!f)
			continue;
		same = fgets(buf, sizeof(buf), f) && (buf[strcspn(buf, "\n")] = '\0', !strcmp(buf, ca));
		fclose(f);
		if (!same)
			continue;
		snprintf(p, sizeof(p), "/sys/class/infiniband_mad/umad%d/port", n);
		f = fopen(p, "re");
		if (!f)
			continue;
		same = fscanf(f, "%d", &port) == 1 && port == portnum;
		fclose(f);
		if (same)
			return n;
	}
	return -1;
}

/* The issm file of a port: /dev/infiniband/issmN, N that of the port's
 * umadN (rdma-core's umad_get_issm_path); without those files, N counts
 * the ports of the device from 0. */
SOFU_EXPORT int umad_get_issm_path(const char *ca_name, int portnum, char path[], int max)
{
	struct sof_umad_ca_rep r;
	int err, id;

	if (sofu_get_ca_info(ca_name, &r, NULL))
		return -ENODEV;
	err = sofu_resolve(&r, ca_name, &portnum);
	if (err)
		return err;
	if (!path || max <= 0)
		return -EINVAL;
	id = umad_id_of(r.name, portnum);
	snprintf(path, (size_t)max, "/dev/infiniband/issm%d", id >= 0 ? id : portnum - 1);
	return 0;
}

SOFU_EXPORT struct umad_device_node *umad_get_ca_device_list(void)
{
	struct umad_device_node *head = NULL, **tail = &head;
	struct sof_umad_ca_rep r;

	for (uint32_t i = 0; i < SOF_UMAD_MAX_CAS; i++) {
		struct umad_device_node *n;
		char *name;

		if (sofu_ca_at(i, &r))
			continue;
		n = calloc(1, sizeof(*n));
		name = strdup(r.name);
		if (!n || !name) {
			free(n);
			free(name);
			umad_free_ca_device_list(head);
			errno = ENOMEM;
			return NULL;
		}
		n->ca_name = name;
		*tail = n;
		tail = &n->next;
	}
	return head;
}

SOFU_EXPORT void umad_free_ca_device_list(struct umad_device_node *head)
{
	while (head) {
		struct umad_device_node *next = head->next;

		free((char *)head->ca_name);
		free(head);
		head = next;
	}
}

static int by_name(const void *a, const void *b)
{
	const struct umad_device_node *x = *(struct umad_device_node *const *)a;
	const struct umad_device_node *y = *(struct umad_device_node *const *)b;

	return strcmp(x->ca_name ? x->ca_name : "", y->ca_name ? y->ca_name : "");
}

/* The first size nodes of the list, in the order of their names. */
SOFU_EXPORT int umad_sort_ca_device_list(struct umad_device_node **head, size_t size)
{
	struct umad_device_node **v, *rest, *n;
	size_t i = 0;

	if (!head)
		return -EINVAL;
	if (!size) {
		for (n = *head; n; n = n->next)
			size++;
	}
	if (size < 2)
		return 0;
	v = calloc(size, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (n = *head; n && i < size; n = n->next)
		v[i++] = n;
	rest = n;
	size = i;
	qsort(v, size, sizeof(*v), by_name);
	for (i = 0; i + 1 < size; i++)
		v[i]->next = v[i + 1];
	v[size - 1]->next = rest;
	*head = v[0];
	free(v);
	return 0;
}
