import net from 'node:net';

/** A TCP relay to one address that can be cut (every connection dropped, new ones refused) and restored. */
export interface TcpProxy {
  port: number;
  /** The same URL pointed at the proxy. */
  via(url: string): string;
  cut(): void;
  restore(): void;
  close(): Promise<void>;
}

export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  const sockets = new Set<net.Socket>();
  let down = false;
  const track = (socket: net.Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => socket.destroy());
  };

  const server = net.createServer((client) => {
    track(client);
    if (down) {
      client.destroy();
      return;
    }
    const upstream = net.connect(target.port, target.host);
    track(upstream);
    client.pipe(upstream);
    upstream.pipe(client);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as net.AddressInfo).port;

  return {
    port,
    via(url: string) {
      const parsed = new URL(url);
      parsed.hostname = '127.0.0.1';
      parsed.port = String(port);
      return parsed.toString();
    },
    cut() {
      down = true;
      for (const socket of sockets) socket.destroy();
    },
    restore() {
      down = false;
    },
    close() {
      down = true;
      for (const socket of sockets) socket.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
