// tvm_webgpu.js: runs the kernels of a tvm WebGPU module (kernels.json, written by
// tvm.target.webgpu.export_web) in a browser through navigator.gpu.
//
//   const mod = await TVMWebGPU.load("kernels.json");      // or load(jsonObject, device)
//   const x = mod.tensor(new Float32Array(n), [n], "float32");
//   const y = mod.empty([n], "float32");
//   await mod.call("add", x, y);     // runs the host program: shape checks, launches
//   const out = await mod.read(y);   // a typed array
//
// The host programs are the JSON of tvm.tir.codegen.host_program; their expressions are the
// run-time format of tvm.runtime.int_expr.  The bind-group layout of each kernel is its
// "layout" (tvm.target.webgpu.layout): storage buffers in parameter order, then the error
// record of a kernel with checks, then one uniform buffer holding the scalars (4 bytes each).
(function (root) {
  "use strict";

  const ERROR_RECORD_BYTES = 64;
  const TYPED = {
    float32: Float32Array, float16: Uint16Array, int32: Int32Array, uint32: Uint32Array,
    int64: BigInt64Array, bool: Uint8Array, int8: Int8Array, uint8: Uint8Array,
  };
  const BYTES = { float32: 4, float16: 2, int32: 4, uint32: 4, int64: 8, bool: 1, int8: 1,
                  uint8: 1, float64: 8 };

  function tdiv(a, b) { if (b === 0) throw new Error("division by zero in a launch expression"); return Math.trunc(a / b); }
  function tmod(a, b) { if (b === 0) throw new Error("modulo by zero in a launch expression"); return a % b; }
  function fdiv(a, b) { if (b === 0) throw new Error("division by zero in a launch expression"); return Math.floor(a / b); }
  function fmod(a, b) { return a - fdiv(a, b) * b; }

  const BINARY = {
    add: (a, b) => a + b, sub: (a, b) => a - b, mul: (a, b) => a * b,
    div: tdiv, mod: tmod, floordiv: fdiv, floormod: fmod,
    min: Math.min, max: Math.max,
    eq: (a, b) => a === b, ne: (a, b) => a !== b, lt: (a, b) => a < b, le: (a, b) => a <= b,
    gt: (a, b) => a > b, ge: (a, b) => a >= b,
    and: (a, b) => Boolean(a) && Boolean(b), or: (a, b) => Boolean(a) || Boolean(b),
  };

  function cast(dtype, v) {
    if (dtype === "bool") return Boolean(v);
    if (dtype.startsWith("float")) return Number(v);
    v = Number(v);
    if (dtype === "int32") return v | 0;
    if (dtype === "uint32") return v >>> 0;
    if (dtype === "int64" || dtype === "uint64") return Math.trunc(v);
    const m = /^(u?)int(\d+)$/.exec(dtype);
    if (m) {
      const bits = Number(m[2]), span = 2 ** bits;
      let r = ((Math.trunc(v) % span) + span) % span;
      if (!m[1] && r >= span / 2) r -= span;
      return r;
    }
    throw new Error(`cast to ${dtype} is not supported`);
  }

  // The value of run-time expression e in environment env (a Map of names).
  function evaluate(e, env) {
    if (typeof e === "number" || typeof e === "boolean") return e;
    if (!Array.isArray(e)) throw new Error(`bad expression ${JSON.stringify(e)}`);
    const op = e[0];
    if (op === "var") {
      if (!env.has(e[1])) throw new Error(`expression uses ${e[1]}, which is not bound`);
      return env.get(e[1]);
    }
    if (op === "select") return evaluate(e[1], env) ? evaluate(e[2], env) : evaluate(e[3], env);
    if (op === "cast") return cast(e[1], evaluate(e[2], env));
    if (op === "neg") return -evaluate(e[1], env);
    if (op === "not") return !evaluate(e[1], env);
    const f = BINARY[op];
    if (!f) throw new Error(`unknown operator ${op}`);
    return f(evaluate(e[1], env), evaluate(e[2], env));
  }

  // printf as the kernels' messages use it (%d %lld %s ...: the value as text).
  function printf(message, args) {
    let k = 0;
    return message.replace(/%(%|[-+ #0]*\d*(?:\.\d+)?(?:hh|h|ll|l|z|j|t|L)?[diouxXeEfgGcsp])/g,
      (m, conv) => (conv === "%" ? "%" : String(k < args.length ? args[k++] : "?")));
  }

  class Tensor {
    constructor(buffer, shape, dtype, offset) {
      this.buffer = buffer; this.shape = shape; this.dtype = dtype; this.offset = offset || 0;
    }
    get size() { return this.shape.reduce((a, b) => a * b, 1); }
    get nbytes() { return this.size * (BYTES[this.dtype] || 4); }
  }

  class Module {
    constructor(payload, device) {
      if (payload.format !== "webgpu") throw new Error(`expected a webgpu module, got format ${payload.format}`);
      this.payload = payload;
      this.device = device;
      this.kernels = new Map(payload.kernels.map((k) => [k.name, k]));
      this.functions = new Map(payload.functions.map((f) => [f.name, f]));
      this.objects = new Map();    // kernel -> {module, groupLayout, layout, pipelines}
      this.errorRecord = null;
    }

    get functionNames() { return [...this.functions.keys()]; }

    _buffer(nbytes) {
      const size = Math.max(16, Math.ceil(nbytes / 16) * 16);
      return this.device.createBuffer({ size, usage: GPUBufferUsage.STORAGE |
        GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST });
    }

    // A device tensor holding the typed array data (shape, dtype as in the module).
    tensor(data, shape, dtype) {
      const t = new Tensor(this._buffer(data.byteLength), shape, dtype, 0);
      const bytes = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
      const padded = new Uint8Array(Math.ceil(bytes.length / 4) * 4);
      padded.set(bytes);
      this.device.queue.writeBuffer(t.buffer, 0, padded);
      return t;
    }

    empty(shape, dtype) {
      const t = new Tensor(null, shape, dtype, 0);
      t.buffer = this._buffer(t.nbytes);
      return t;
    }

    // The contents of tensor t as a typed array (waits for the queued work).
    async read(t) {
      const size = Math.ceil(t.nbytes / 4) * 4;
      const staging = this.device.createBuffer({ size: Math.max(size, 4), usage:
        GPUBufferUsage.COPY_DST | GPUBufferUsage.MAP_READ });
      const enc = this.device.createCommandEncoder();
      enc.copyBufferToBuffer(t.buffer, t.offset, staging, 0, size);
      this.device.queue.submit([enc.finish()]);
      await staging.mapAsync(GPUMapMode.READ);
      const copy = staging.getMappedRange().slice(0, t.nbytes);
      staging.unmap();
      staging.destroy();
      const T = TYPED[t.dtype] || Uint8Array;
      return new T(copy);
    }

    async _kernel(name) {
      let k = this.objects.get(name);
      if (k) return k;
      const meta = this.kernels.get(name);
      for (const f of meta.features || []) {
        if (!this.device.features.has(f)) throw new Error(`webgpu: kernel ${name} needs the adapter feature ${f}`);
      }
      const module = this.device.createShaderModule({ code: meta.wgsl, label: name });
      const info = await module.getCompilationInfo();
      const errors = info.messages.filter((m) => m.type === "error");
      if (errors.length) {
        throw new Error(`webgpu: the WGSL of kernel ${name} does not compile: ` +
          errors.map((m) => `line ${m.lineNum}: ${m.message}`).join("; "));
      }
      const lay = meta.layout;
      const entries = [];
      for (let i = 0; i < lay.num_storage; i++) {
        entries.push({ binding: i, visibility: GPUShaderStage.COMPUTE,
          buffer: { type: lay.read_only[i] ? "read-only-storage" : "storage" } });
      }
      if (lay.uniform_binding !== null) {
        entries.push({ binding: lay.uniform_binding, visibility: GPUShaderStage.COMPUTE,
          buffer: { type: "uniform" } });
      }
      const groupLayout = this.device.createBindGroupLayout({ entries });
      const layout = this.device.createPipelineLayout({ bindGroupLayouts: [groupLayout] });
      k = { module, groupLayout, layout, pipelines: new Map() };
      this.objects.set(name, k);
      return k;
    }

    _pipeline(k, block) {
      const key = block.join(",");
      let p = k.pipelines.get(key);
      if (!p) {
        p = this.device.createComputePipeline({ layout: k.layout, compute: {
          module: k.module, entryPoint: "main",
          constants: { tvm_wg_x: block[0], tvm_wg_y: block[1], tvm_wg_z: block[2] } } });
        k.pipelines.set(key, p);
      }
      return p;
    }

    async _launch(name, args, extents) {
      const meta = this.kernels.get(name);
      if (!meta) throw new Error(`launch of unknown kernel ${name}`);
      const dims = new Map(meta.launch_params.map((tag, i) => [tag, extents[i]]));
      const grid = ["x", "y", "z"].map((a) => dims.get(`blockIdx.${a}`) || 1);
      const block = ["x", "y", "z"].map((a) => dims.get(`threadIdx.${a}`) || 1);
      if (Math.min(...grid, ...block) <= 0) return;
      const checks = meta.error_record || [];
      const params = checks.length ? [...meta.params, { name: "tvm_error_record", kind: "handle" }] : meta.params;
      if (checks.length) {
        if (!this.errorRecord) this.errorRecord = this._buffer(ERROR_RECORD_BYTES);
        args = [...args, { buffer: this.errorRecord, offset: 0 }];
      }
      const k = await this._kernel(name);
      const lay = meta.layout;
      const uniform = new ArrayBuffer(lay.uniform_size);
      const view = new DataView(uniform);
      const entries = [];
      params.forEach((p, i) => {
        const v = args[i];
        if (p.kind === "handle") {
          entries.push({ binding: lay.bindings[i], resource: { buffer: v.buffer, offset: v.offset } });
        } else {
          const off = lay.uniform[i];
          if (p.dtype === "float32") view.setFloat32(off, Number(v), true);
          else if (p.dtype === "uint32") view.setUint32(off, Number(v), true);
          else {
            if (v < -(2 ** 31) || v >= 2 ** 31) throw new Error(`webgpu: kernel ${name} parameter ${p.name} = ${v} does not fit in 32 bits`);
            view.setInt32(off, Number(v), true);
          }
        }
      });
      if (lay.uniform_binding !== null) {
        const ubuf = this.device.createBuffer({ size: lay.uniform_size, usage:
          GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST });
        this.device.queue.writeBuffer(ubuf, 0, uniform);
        entries.push({ binding: lay.uniform_binding, resource: { buffer: ubuf } });
      }
      const group = this.device.createBindGroup({ layout: k.groupLayout, entries });
      const enc = this.device.createCommandEncoder();
      const pass = enc.beginComputePass();
      pass.setPipeline(this._pipeline(k, block));
      pass.setBindGroup(0, group);
      pass.dispatchWorkgroups(grid[0], grid[1], grid[2]);
      pass.end();
      this.device.queue.submit([enc.finish()]);
      if (checks.length) await this._raiseRecorded(checks);
    }

    async _raiseRecorded(checks) {
      const rec = new Tensor(this.errorRecord, [ERROR_RECORD_BYTES / 4], "int32", 0);
      const words = await this.read(rec);
      const number = words[0];
      if (number === 0) return;
      this.device.queue.writeBuffer(this.errorRecord, 0, new Uint8Array(ERROR_RECORD_BYTES));
      const check = checks[number - 1];
      if (!check) throw new Error(`a kernel reported check ${number}, which it does not have`);
      const args = [];
      for (let k = 0; k < check.nargs; k++) {
        args.push((BigInt(words[3 + 2 * k]) << 32n) | BigInt(words[2 + 2 * k] >>> 0));
      }
      throw new Error(printf(check.message, args));
    }

    // Run host function name on tensors (and numbers for scalar parameters).
    async call(name, ...args) {
      const f = this.functions.get(name);
      if (!f) throw new Error(`no function ${name}; the module has ${this.functionNames.join(", ")}`);
      if (args.length !== f.params.length) {
        throw new Error(`${name}: expected ${f.params.length} arguments (${f.params.map((p) => p.name).join(", ")}), got ${args.length}`);
      }
      const env = new Map();
      const deferred = [];
      f.params.forEach((p, i) => {
        const v = args[i];
        if (p.kind === "scalar") { env.set(p.var, v); return; }
        if (!(v instanceof Tensor)) throw new Error(`${name}: argument ${p.name} expects a tensor`);
        if (v.dtype !== p.dtype) throw new Error(`${name}: argument ${p.name} has dtype ${v.dtype}, expected ${p.dtype}`);
        if (v.shape.length !== p.shape.length) throw new Error(`${name}: argument ${p.name} has ndim = ${v.shape.length}, expected ${p.shape.length}`);
        p.shape.forEach((want, d) => {
          const given = v.shape[d];
          const what = `argument ${p.name} has shape[${d}] = ${given}`;
          if (typeof want === "number") {
            if (given !== want) throw new Error(`${name}: ${what}, expected ${want}`);
          } else if (want[0] === "var" && !env.has(want[1])) {
            env.set(want[1], given);
          } else deferred.push([want, given, what]);
        });
        env.set(p.data, v);
      });
      for (const [want, given, what] of deferred) {
        const expected = evaluate(want, env);
        if (expected !== given) throw new Error(`${name}: ${what}, expected ${expected}`);
      }
      await this._run(f.body, env, name);
    }

    async _run(s, env, fname) {
      const kind = s[0];
      if (kind === "seq") { for (const item of s[1]) await this._run(item, env, fname); }
      else if (kind === "let") { env.set(s[1], evaluate(s[2], env)); await this._run(s[3], env, fname); }
      else if (kind === "assert") {
        if (!evaluate(s[1], env)) throw new Error(printf(s[2], s[3].map((a) => evaluate(a, env))));
        await this._run(s[4], env, fname);
      } else if (kind === "alloc") {
        const count = evaluate(s[3], env);
        const buf = this._buffer(Math.max(1, count * (BYTES[s[2]] || 4)));
        env.set(s[1], { buffer: buf, offset: 0 });
        await this._run(s[4], env, fname);
      } else if (kind === "launch") {
        const args = s[2].map((a) => {
          const v = evaluate(a, env);
          return v instanceof Tensor ? { buffer: v.buffer, offset: v.offset } : v;
        });
        await this._launch(s[1], args, s[3].map((e) => evaluate(e, env)));
      } else if (kind === "for") {
        const lo = evaluate(s[2], env), n = evaluate(s[3], env);
        for (let i = lo; i < lo + n; i++) { env.set(s[1], i); await this._run(s[4], env, fname); }
      } else if (kind === "if") {
        if (evaluate(s[1], env)) await this._run(s[2], env, fname);
        else if (s[3] !== null) await this._run(s[3], env, fname);
      } else if (kind !== "nop") throw new Error(`${fname}: unknown host-program statement ${kind}`);
    }
  }

  // Load a module: url (of kernels.json) or its parsed JSON; device: a GPUDevice, else one
  // is requested (with shader-f16 where the adapter has it).
  async function load(source, device) {
    const payload = typeof source === "string" ? await (await fetch(source)).json() : source;
    if (!device) {
      if (!root.navigator || !navigator.gpu) throw new Error("this browser does not expose WebGPU (navigator.gpu)");
      const adapter = await navigator.gpu.requestAdapter();
      if (!adapter) throw new Error("no WebGPU adapter");
      const features = adapter.features.has("shader-f16") ? ["shader-f16"] : [];
      device = await adapter.requestDevice({ requiredFeatures: features });
    }
    return new Module(payload, device);
  }

  root.TVMWebGPU = { load, Module, Tensor, evaluate, printf };
})(typeof globalThis !== "undefined" ? globalThis : this);
