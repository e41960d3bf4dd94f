import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';

describe('build settings', () => {
  it('reads MAX_BUNDLE_MB, MAX_CONCURRENT_BUILDS, BUILD_TIMEOUT_SECONDS and SECRETS_KEY', () => {
    const config = loadConfig({
      MAX_BUNDLE_MB: '2.5',
      MAX_CONCURRENT_BUILDS: '3',
      BUILD_TIMEOUT_SECONDS: '60',
      SECRETS_KEY: 's'.repeat(32),
    });
    expect(config.maxBundleBytes).toBe(2.5 * 1024 * 1024);
    expect(config.maxConcurrentBuilds).toBe(3);
    expect(config.buildTimeoutSeconds).toBe(60);
    expect(config.secretsKey).toBe('s'.repeat(32));
  });

  it.each([
    ['MAX_BUNDLE_MB', '0'],
    ['MAX_CONCURRENT_BUILDS', '1.5'],
    ['BUILD_TIMEOUT_SECONDS', 'forever'],
    ['SECRETS_KEY', 'too-short'],
    ['BUILD_PYTHON_INSTALLER', 'conda'],
  ])('stops on a bad %s, naming it', (name, value) => {
    expect(() => loadConfig({ [name]: value })).toThrow(ConfigError);
    expect(() => loadConfig({ [name]: value })).toThrow(new RegExp(`^Invalid configuration: ${name} `));
  });

  it('builds with uv unless BUILD_PYTHON_INSTALLER says pip', () => {
    expect(loadConfig({}).buildPythonInstaller).toBe('uv');
    expect(loadConfig({ BUILD_PYTHON_INSTALLER: 'pip' }).buildPythonInstaller).toBe('pip');
    expect(() => loadConfig({ BUILD_PYTHON_INSTALLER: 'conda' })).toThrow(/BUILD_PYTHON_INSTALLER must be uv or pip/);
  });

  it('hands build steps the package tools’ settings, never the service’s secrets', () => {
    const config = loadConfig({
      HOME: '/home/crewd',
      PIP_INDEX_URL: 'https://pypi.internal/simple',
      npm_config_registry: 'https://npm.internal',
      HTTPS_PROXY: 'http://proxy:3128',
      DATABASE_URL: 'postgres://u:secret@db/crewd',
      BOOTSTRAP_API_KEY: 'a-very-long-secret-key',
      SECRETS_KEY: 'k'.repeat(40),
      AWS_SECRET_ACCESS_KEY: 'nope',
    });
    expect(config.buildEnv).toEqual({
      HOME: '/home/crewd',
      PIP_INDEX_URL: 'https://pypi.internal/simple',
      npm_config_registry: 'https://npm.internal',
      HTTPS_PROXY: 'http://proxy:3128',
    });
  });
});
