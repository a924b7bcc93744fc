// SPDX-License-Identifier: GPL-2.0
/*
 * Waits until what the guest wrote to its console has left the serial
 * port. write() returns once the tty has the bytes; a reboot right after
 * drops what the UART has not sent yet (the end of the log, with the
 * verdict: seen on Debian's PREEMPT_RT kernel, whose console work runs
 * in threads).
 */
#include <stdio.h>
#include <termios.h>
#include <unistd.h>

int main(void)
{
	if (tcdrain(STDOUT_FILENO)) {
		perror("tcdrain");
		return 1;
	}
	return 0;
}
