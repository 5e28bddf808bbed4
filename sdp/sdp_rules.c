/*
 * The rules of libsdp.conf (OFED libsdp's format) and the log.
 *
 *   use sdp|tcp|both server|listen|client|connect PROGRAM ADDRESS[/PREFIX][:PORT[-PORT]]
 *   log [destination stderr|syslog|file PATH] [min-level 1-9]
 *
 * PROGRAM is a shell pattern on the program's name (`*` and `?`); ADDRESS
 * is an IPv4 address, an IPv6 one, or `*`; PORT a port, a range or `*`.
 * An IPv6 address with a port is written in brackets, `[fd77::1]:5000`,
 * `[fd77::]/64:5000` (without them the words after the last colon would
 * be taken for the address's); an IPv4 rule matches IPv4 addresses (and
 * IPv4-mapped ones of AF_INET6 sockets), an IPv6 rule IPv6 ones. The first rule
 * that matches decides; none matching means TCP. The file is
 * $LIBSDP_CONFIG_FILE, else /etc/libsdp.conf; without one, libsdp's
 * defaults hold: `use both server * *:*` and `use both client * *:*`.
 * $LIBSDP_LOG=PATH logs to PATH at min-level 4 (every match), and
 * $LIBSDP_LOG_LEVEL sets the level. Each decision is logged at level 7
 * ("connect and listen summary"), and the rule that made it at level 4.
 */
#include "sdp.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#define SDP_MAX_RULES 256

struct sdp_rule {
	enum sdp_use use;
	enum sdp_role role;
	char prog[64];
	uint8_t addr[16]; /* IPv4 ones IPv4-mapped (sdp_addr.c) */
	int prefix;	  /* bits of addr that count: 0 any */
	uint16_t port_lo, port_hi;
	int line;
};

const char *const sdp_use_names[] = {
	[SDP_USE_TCP] = "tcp",
	[SDP_USE_SDP] = "sdp",
	[SDP_USE_BOTH] = "both",
};

static const char *const role_names[] = {
	[SDP_ROLE_SERVER] = "server",
	[SDP_ROLE_CLIENT] = "client",
};

static struct sdp_rule rules[SDP_MAX_RULES];
static int nrules;
static int log_level = SDP_LOG_ERR;
/* a log file is opened for each line: a program may close every
 * descriptor it did not open and reuse the numbers for its sockets */
static char log_path[256];
static int log_syslog;
static const char *config_path = "(defaults)";

void sdp_log_set(const char *dest, int min_level)
{
	if (min_level >= 1 && min_level <= 9)
		log_level = min_level;
	if (!dest)
		return;
	log_syslog = 0;
	log_path[0] = 0;
	if (!strcmp(dest, "syslog"))
		log_syslog = 1;
	else if (strcmp(dest, "stderr"))
		snprintf(log_path, sizeof(log_path), "%s", dest);
}

void sdp_log(int level, const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	int n, fd;

	if (level < log_level)
		return;
	n = snprintf(buf, sizeof(buf), "libsdp[%d] %s: ", getpid(), program_invocation_short_name);
	va_start(ap, fmt);
	n += vsnprintf(buf + n, sizeof(buf) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof(buf) - 2)
		n = (int)sizeof(buf) - 2;
	if (log_syslog) {
		syslog(level >= SDP_LOG_ERR ? LOG_ERR : LOG_INFO, "%s", buf);
		return;
	}
	buf[n++] = '\n';
	if (!sdp_real.write || !sdp_real.close)
		return;
	if (!log_path[0]) {
		sdp_real.write(2, buf, (size_t)n);
		return;
	}
	fd = open(log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd >= 0) {
		sdp_real.write(fd, buf, (size_t)n);
		sdp_real.close(fd);
	}
}

/* the first PREFIX bits of A and B are equal */
static int prefix_eq(const uint8_t *a, const uint8_t *b, int prefix)
{
	int whole = prefix / 8, rest = prefix % 8;

	if (memcmp(a, b, (size_t)whole))
		return 0;
	return !rest || !((a[whole] ^ b[whole]) & (0xff << (8 - rest)));
}

/* ADDRESS[/PREFIX][:PORT[-PORT]], [IPV6][/PREFIX][:PORT[-PORT]] or `*`
 * forms; an IPv6 address without brackets has no port. */
static int parse_addr(char *s, struct sdp_rule *r)
{
	char *colon, *slash, *dash, *end;
	struct in_addr a;
	long prefix = -1;
	int v6;

	r->port_lo = 0;
	r->port_hi = 65535;
	if (*s == '[') {
		end = strchr(s, ']');
		if (!end)
			return -EINVAL;
		*end++ = 0;
		s++;
		colon = strrchr(end, ':');
		slash = strchr(end, '/');
	} else {
		colon = strchr(s, ':');
		if (colon && strchr(colon + 1, ':'))
			colon = NULL; /* an IPv6 address, no port */
		slash = strchr(s, '/');
	}
	if (colon) {
		*colon++ = 0;
		if (strcmp(colon, "*")) {
			dash = strchr(colon, '-');
			r->port_lo = (uint16_t)strtoul(colon, NULL, 10);
			r->port_hi = dash ? (uint16_t)strtoul(dash + 1, NULL, 10) : r->port_lo;
			if (r->port_hi < r->port_lo)
				return -EINVAL;
		}
	}
	if (slash) {
		*slash++ = 0;
		prefix = strtol(slash, NULL, 10);
	}
	if (!strcmp(s, "*") || !*s) {
		r->prefix = 0;
		return 0;
	}
	memset(r->addr, 0, sizeof(r->addr));
	v6 = inet_pton(AF_INET6, s, r->addr) == 1;
	if (!v6) {
		if (inet_pton(AF_INET, s, &a) != 1)
			return -EINVAL;
		r->addr[10] = r->addr[11] = 0xff;
		memcpy(&r->addr[12], &a, 4);
	}
	if (prefix < 0)
		prefix = v6 ? 128 : 32;
	if (prefix > (v6 ? 128 : 32))
		return -EINVAL;
	r->prefix = (int)prefix + (v6 ? 0 : 96);
	return 0;
}

static void parse_line(char *line, int lineno)
{
	char *w[6], *save = NULL, *t;
	struct sdp_rule *r;
	int n = 0, i;

	for (t = strtok_r(line, " \t\r\n", &save); t && n < 6; t = strtok_r(NULL, " \t\r\n", &save))
		w[n++] = t;
	if (!n || w[0][0] == '#')
		return;
	if (!strcmp(w[0], "log")) {
		const char *dest = NULL;
		int level = 0;

		for (i = 1; i + 1 < n; i += 2) {
			if (!strcmp(w[i], "min-level"))
				level = atoi(w[i + 1]);
			else if (!strcmp(w[i], "destination"))
				dest = !strcmp(w[i + 1], "file") && i + 2 < n ? w[++i + 1] : w[i + 1];
		}
		if (!getenv("LIBSDP_LOG"))
			sdp_log_set(dest, level);
		return;
	}
	if (strcmp(w[0], "use") || n < 5 || nrules == SDP_MAX_RULES) {
		sdp_log(SDP_LOG_WARN, "%s:%d: not a rule", config_path, lineno);
		return;
	}
	r = &rules[nrules];
	memset(r, 0, sizeof(*r));
	r->line = lineno;
	if (!strcmp(w[1], "sdp"))
		r->use = SDP_USE_SDP;
	else if (!strcmp(w[1], "tcp"))
		r->use = SDP_USE_TCP;
	else if (!strcmp(w[1], "both"))
		r->use = SDP_USE_BOTH;
	else
		goto bad;
	if (!strcmp(w[2], "server") || !strcmp(w[2], "listen"))
		r->role = SDP_ROLE_SERVER;
	else if (!strcmp(w[2], "client") || !strcmp(w[2], "connect"))
		r->role = SDP_ROLE_CLIENT;
	else
		goto bad;
	snprintf(r->prog, sizeof(r->prog), "%s", w[3]);
	if (parse_addr(w[4], r))
		goto bad;
	nrules++;
	return;
bad:
	sdp_log(SDP_LOG_WARN, "%s:%d: bad rule, ignored", config_path, lineno);
}

void sdp_rules_load(void)
{
	const char *env = getenv("LIBSDP_CONFIG_FILE"), *lg = getenv("LIBSDP_LOG");
	const char *lv = getenv("LIBSDP_LOG_LEVEL");
	char line[512], def1[] = "use both server * *:*", def2[] = "use both client * *:*";
	FILE *f;
	int n = 0;

	if (lg)
		sdp_log_set(lg, SDP_LOG_MATCH);
	if (lv)
		sdp_log_set(NULL, atoi(lv));
	config_path = env ? env : "/etc/libsdp.conf";
	f = fopen(config_path, "re");
	if (!f) {
		if (env)
			sdp_log(SDP_LOG_ERR, "cannot read %s: %s", env, strerror(errno));
		config_path = "(defaults)";
		parse_line(def1, 1);
		parse_line(def2, 2);
		return;
	}
	while (fgets(line, sizeof(line), f))
		parse_line(line, ++n);
	fclose(f);
}

static int rule_match(const struct sdp_rule *r, enum sdp_role role, const struct sockaddr_in6 *sin)
{
	static const uint8_t v4any[16] = {[10] = 0xff, [11] = 0xff};
	uint16_t port = ntohs(sin->sin6_port);
	/* :: (a dual-stack socket's any) is also IPv4's 0.0.0.0 */
	int any6 = IN6_IS_ADDR_UNSPECIFIED(&sin->sin6_addr);

	return r->role == role && !fnmatch(r->prog, program_invocation_short_name, 0) &&
	       (prefix_eq(r->addr, sin->sin6_addr.s6_addr, r->prefix) ||
		(any6 && prefix_eq(r->addr, v4any, r->prefix))) &&
	       port >= r->port_lo && port <= r->port_hi;
}

enum sdp_use sdp_rules_match(enum sdp_role role, const struct sockaddr_in6 *sin)
{
	char a[64];
	int i;

	sdp_addr_str(sin, a, sizeof(a));
	for (i = 0; i < nrules; i++) {
		if (!rule_match(&rules[i], role, sin)) {
			sdp_log(SDP_LOG_NOMATCH, "%s %s: %s:%d does not match", role_names[role],
				a, config_path, rules[i].line);
			continue;
		}
		sdp_log(SDP_LOG_MATCH, "%s %s: matches %s:%d (use %s)", role_names[role], a,
			config_path, rules[i].line, sdp_use_names[rules[i].use]);
		return rules[i].use;
	}
	sdp_log(SDP_LOG_MATCH, "%s %s: no rule matches: tcp", role_names[role], a);
	return SDP_USE_TCP;
}
