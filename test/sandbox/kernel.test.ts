import { describe, expect, it } from 'vitest';
import { pidMaxPerNamespace } from '../../src/sandbox/kernel.js';

describe('pidMaxPerNamespace', () => {
  it('is true from Linux 6.14, where pid_max is per PID namespace, and false before or when unreadable', () => {
    expect(pidMaxPerNamespace('6.14.0')).toBe(true);
    expect(pidMaxPerNamespace('6.18.44-fc-v657')).toBe(true);
    expect(pidMaxPerNamespace('7.0.1')).toBe(true);
    expect(pidMaxPerNamespace('6.13.9-arch1')).toBe(false);
    expect(pidMaxPerNamespace('5.15.0-1051-azure')).toBe(false);
    expect(pidMaxPerNamespace('unknown')).toBe(false);
  });
});
