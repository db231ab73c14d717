/* SPDX-License-Identifier: MIT */
/*
 * arfd logging: one level-checked macro (as Redis's serverLog), writing one
 * line per message to stderr (the journal, under systemd) with the level.
 */
#ifndef ARFD_LOG_H
#define ARFD_LOG_H

enum arfd_log_level { ARFD_LOG_ERROR = 0, ARFD_LOG_WARN, ARFD_LOG_INFO, ARFD_LOG_DEBUG };

extern int arfd_log_level;

void arfd_log_write(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Parse "error|warn|info|debug"; returns -1 if unknown. */
int arfd_log_parse_level(const char *s);

/* For what a hostile peer can make happen at will (malformed frames,
 * refused handshakes): at most a burst of ARFD_LOG_LIMIT_BURST lines, then
 * ARFD_LOG_LIMIT_RATE a second across all callers; the next line that gets
 * through says how many were dropped. */
#define ARFD_LOG_LIMIT_BURST 20
#define ARFD_LOG_LIMIT_RATE  5
void arfd_log_write_limited(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define arfd_log_limited(level, ...)                                   \
	do {                                                            \
		if ((level) <= arfd_log_level)                          \
			arfd_log_write_limited((level), __VA_ARGS__);   \
	} while (0)

#define arfd_log(level, ...)                                   \
	do {                                                    \
		if ((level) <= arfd_log_level)                  \
			arfd_log_write((level), __VA_ARGS__);   \
	} while (0)

#endif
