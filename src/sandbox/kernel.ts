import { release } from 'node:os';

/**
 * Linux 6.14 and newer keep pid_max per PID namespace. Before, /proc/sys/kernel/pid_max is the machine's: a sandbox of
 * crewd as root must never write it there (it would bound every process of the host).
 */
export function pidMaxPerNamespace(kernelRelease = release()): boolean {
  const [major, minor] = (kernelRelease.split('-')[0] ?? '').split('.').map(Number);
  if (major === undefined || minor === undefined || Number.isNaN(major) || Number.isNaN(minor)) return false;
  return major > 6 || (major === 6 && minor >= 14);
}
