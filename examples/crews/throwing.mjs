// Throws at once: an uncaught error, which Node follows with its stack and version line.
throw new TypeError('the crew broke');
