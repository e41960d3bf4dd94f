import { notFound } from '../errors.js';

export const runNotFound = () => notFound('Run not found');
