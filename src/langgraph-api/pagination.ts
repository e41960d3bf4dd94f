import type { FastifyReply } from 'fastify';

/** A search's page as asked, read one row further to know whether another page follows. */
export interface Page {
  limit: number;
  offset: number;
}

/** The rows a search reads for `page`: one more than it answers. */
export const pageAndOne = (page: Page): Page => ({ limit: page.limit + 1, offset: page.offset });

/**
 * The page of `rows` (read with `pageAndOne`), with the official server's paging headers: the SDKs read
 * `X-Pagination-Next` as the next page's offset (`assistants.search(response_format="object")`,
 * `includePagination` in JS). Their values are the official server's: with a next page, `Next` is its
 * offset and `Total` one more; on the last page, `Total` is the rows up to its end.
 */
export function answerPage<T>(reply: FastifyReply, rows: T[], page: Page): T[] {
  const answered = rows.slice(0, page.limit);
  if (rows.length > page.limit) {
    const next = page.offset + page.limit;
    reply.header('X-Pagination-Total', String(next + 1));
    reply.header('X-Pagination-Next', String(next));
  } else {
    reply.header('X-Pagination-Total', String(page.offset + answered.length));
  }
  return answered;
}
