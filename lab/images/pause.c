/* The pod sandbox's process (the pause image's entrypoint): it holds the pod's namespaces, reaps
 * the zombies a PID-sharing pod leaves to it, and exits on SIGINT or SIGTERM. Built static, so
 * the image holds this one file. */
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void on_stop(int sig)
{
	(void)sig;
	_exit(0);
}

static void on_child(int sig)
{
	(void)sig;
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
}

int main(void)
{
	struct sigaction stop = {.sa_handler = on_stop}, child = {.sa_handler = on_child, .sa_flags = SA_NOCLDSTOP};
	if (sigaction(SIGINT, &stop, NULL) || sigaction(SIGTERM, &stop, NULL) || sigaction(SIGCHLD, &child, NULL))
		return 1;
	for (;;)
		pause();
}
