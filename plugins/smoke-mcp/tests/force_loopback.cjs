// Preloaded with `node --require` in smoke-mcp's tests: server-everything calls
// app.listen(PORT) with no host, which binds every interface. This makes any
// port-only listen() bind 127.0.0.1 and prints the port actually bound.
const net = require("net");
const originalListen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  const first = args[0];
  if (typeof first === "number" || (typeof first === "string" && /^\d+$/.test(first))) {
    const callback = typeof args[args.length - 1] === "function" ? args[args.length - 1] : undefined;
    this.once("listening", () => {
      process.stderr.write(`SMOKE_LISTENING ${this.address().address} ${this.address().port}\n`);
    });
    return originalListen.call(this, Number(first), "127.0.0.1", callback);
  }
  return originalListen.apply(this, args);
};
