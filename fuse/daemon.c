/* SPDX-License-Identifier: MIT */
/*
 * Going to the background the way mount(8) needs: fork before any thread
 * exists, let the child connect and mount, and keep the parent (the
 * process mount(8) waits for) until the child writes one status byte and
 * an error line to a pipe.  The parent then exits 0 with the mount up, or
 * prints the child's reason and exits 1.  Also the log sink: stderr while
 * a terminal may read it, syslog once the daemon is detached.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <syslog.h>
#include <unistd.h>

#include "arf_fuse.h"

int arf_fuse_daemonize(void)
{
	int fds[2];
	char msg[1024];
	size_t got = 0;
	ssize_t r;

	if (pipe2(fds, O_CLOEXEC))
		return -errno;
	pid_t pid = fork();
	if (pid < 0) {
		int e = errno;
		close(fds[0]);
		close(fds[1]);
		return -e;
	}
	if (pid == 0) {
		close(fds[0]);
		setsid();
		return fds[1];
	}
	close(fds[1]);
	while (got < sizeof(msg) - 1 &&
	       ((r = read(fds[0], msg + got, sizeof(msg) - 1 - got)) > 0 || (r < 0 && errno == EINTR)))
		if (r > 0)
			got += (size_t)r;
	msg[got] = 0;
	close(fds[0]);
	if (got == 0) {
		int status = 0;
		waitpid(pid, &status, 0);
		fprintf(stderr, "arf-fuse: the daemon exited before mounting (status %d)\n",
			WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
		_exit(1);
	}
	if (msg[0] != '0') {
		fprintf(stderr, "arf-fuse: %s\n", msg + 1);
		waitpid(pid, NULL, 0);
		_exit(1);
	}
	_exit(0);
}

void arf_fuse_report(int ready_fd, int status, const char *msg)
{
	char line[1024];
	if (ready_fd < 0)
		return;
	int n = snprintf(line, sizeof(line), "%c%s", status ? '1' : '0', msg ? msg : "");
	if (n > (int)sizeof(line) - 1)
		n = (int)sizeof(line) - 1;
	ssize_t w = write(ready_fd, line, (size_t)n);
	(void)w;
	close(ready_fd);
}

static void to_syslog(enum fuse_log_level level, const char *fmt, va_list ap)
{
	vsyslog((int)level, fmt, ap);
}

/* Detach from the terminal: stdio to /dev/null (stderr kept for debug). */
void arf_fuse_detach(int keep_stderr)
{
	int fd = open("/dev/null", O_RDWR);
	if (fd >= 0) {
		dup2(fd, 0);
		dup2(fd, 1);
		if (!keep_stderr)
			dup2(fd, 2);
		if (fd > 2)
			close(fd);
	}
	if (chdir("/")) {
		/* nothing to do: the mount is made with an absolute path */
	}
	if (!keep_stderr) {
		openlog("arf-fuse", LOG_PID, LOG_DAEMON);
		fuse_set_log_func(to_syslog);
	}
}

void arf_fuse_log(int level, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fuse_log((enum fuse_log_level)level, "%s\n", msg);
}
