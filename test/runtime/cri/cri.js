#!/usr/bin/env node
// A small CRI v1 client: what crictl is to the kubelet's gRPC calls, for weft's runtime tests
// (cri-tools is not packaged in Debian 12). One call per run, any method of RuntimeService or
// ImageService, request and response as JSON with the proto's own field names:
//
//   cri.js --endpoint unix:///run/containerd/containerd.sock Version '{}'
//   cri.js -e unix:///... RunPodSandbox '{"config": {"metadata": {"name": "p", "uid": "u", "namespace": "default"}}}'
//   cri.js -e unix:///... PodSandboxStatus '{"pod_sandbox_id": "..."}' | jq -r .status.network.ip
//   echo '{...}' | cri.js -e unix:///... RunPodSandbox -
//
// Exit 0 with the response on stdout; on a gRPC error exit 1 with "METHOD: CODE: details" on
// stderr (CODE is the gRPC status name: NOT_FOUND, UNAVAILABLE, ...); exit 2 on a usage error.
// Bytes (ExecSync's stdout/stderr) are printed as UTF-8 strings, int64s as numbers.
//
// The protocol is api/api.proto (test/runtime/cri/setup.sh fetches it from Debian's containerd
// source package). Its gogoproto import and options are Go code-generation hints without effect
// on the wire: they are dropped before loading, so gogo.proto is not needed.
'use strict';

const fs = require('fs');
const os = require('os');
const path = require('path');
const grpc = require('@grpc/grpc-js');
const protoLoader = require('@grpc/proto-loader');

function usage(msg) {
	if (msg) process.stderr.write(`cri.js: ${msg}\n`);
	process.stderr.write('usage: cri.js [--endpoint unix:///path.sock] [--timeout SECONDS] [--proto FILE] METHOD [JSON|-]\n' +
		'       cri.js --list   (the methods)\n');
	process.exit(2);
}

let endpoint = process.env.CRI_ENDPOINT || 'unix:///run/containerd/containerd.sock';
let timeout = 30;
let protoFile = path.join(__dirname, 'api', 'api.proto');
let list = false;
const rest = [];
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i++) {
	const a = argv[i];
	if (a === '-e' || a === '--endpoint') endpoint = argv[++i];
	else if (a === '-t' || a === '--timeout') timeout = Number(argv[++i]);
	else if (a === '--proto') protoFile = argv[++i];
	else if (a === '--list') list = true;
	else if (a === '-h' || a === '--help') usage();
	else rest.push(a);
}
if (!endpoint || !(timeout > 0)) usage('bad --endpoint or --timeout');

function loadProto(file) {
	let text;
	try {
		text = fs.readFileSync(file, 'utf8');
	} catch (e) {
		process.stderr.write(`cri.js: cannot read ${file} (run test/runtime/cri/setup.sh): ${e.message}\n`);
		process.exit(2);
	}
	const stripped = text.split('\n').map((l) =>
		/^\s*import\s+"github\.com\/gogo\/protobuf\/gogoproto\/gogo\.proto";/.test(l) ||
		/^\s*option\s+\(gogoproto\.[a-z_]+\)/.test(l) ? '' : l).join('\n');
	if (/gogoproto/.test(stripped)) {
		process.stderr.write(`cri.js: ${file} uses gogoproto options this loader does not drop\n`);
		process.exit(2);
	}
	const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'weft-cri-'));
	const tmp = path.join(dir, 'api.proto');
	try {
		fs.writeFileSync(tmp, stripped);
		return protoLoader.loadSync(tmp, {keepCase: true, longs: Number, enums: String, defaults: true, oneofs: true});
	} finally {
		fs.rmSync(dir, {recursive: true, force: true});
	}
}

const def = loadProto(protoFile);
const pkg = grpc.loadPackageDefinition(def).runtime.v1;
const services = {RuntimeService: pkg.RuntimeService, ImageService: pkg.ImageService};
const methods = {};
for (const [sname, ctor] of Object.entries(services)) {
	for (const m of Object.keys(ctor.service)) methods[m] = {sname, ctor, desc: ctor.service[m]};
}
if (list) {
	for (const [m, v] of Object.entries(methods)) {
		const kind = v.desc.responseStream ? ' (stream)' : '';
		process.stdout.write(`${v.sname}.${m}${kind}\n`);
	}
	process.exit(0);
}
if (rest.length < 1 || rest.length > 2) usage('one METHOD and at most one JSON request');
const [method, reqArg = '{}'] = rest;
const m = methods[method];
if (!m) usage(`no method ${method} in RuntimeService or ImageService (see --list)`);
if (m.desc.requestStream || m.desc.responseStream) usage(`${method} is a streaming call; not supported`);

let request;
try {
	request = JSON.parse(reqArg === '-' ? fs.readFileSync(0, 'utf8') : reqArg);
} catch (e) {
	usage(`request is not JSON: ${e.message}`);
}
// Catch typos in the request: protobuf would drop an unknown field silently and the runtime would
// then act on a default. Checked against the message types, recursively (maps and repeated too).
function checkFields(type, obj, where) {
	if (obj === null || typeof obj !== 'object' || Array.isArray(obj)) return;
	for (const [k, v] of Object.entries(obj)) {
		const f = type.field.find((x) => x.name === k);
		if (!f) throw new Error(`${where}: ${type.name} has no field "${k}"`);
		if (f.type !== 'TYPE_MESSAGE') continue;
		const sub = def[`runtime.v1.${f.typeName.replace(/^\.?runtime\.v1\./, '')}`] || def[f.typeName.replace(/^\./, '')];
		if (!sub) continue;
		const subType = sub.type;
		if (subType.options && (subType.options.map_entry || subType.options.mapEntry)) continue; // map<string,string>
		const vals = f.label === 'LABEL_REPEATED' ? (Array.isArray(v) ? v : []) : [v];
		for (const x of vals) checkFields(subType, x, `${where}.${k}`);
	}
}
try {
	checkFields(m.desc.requestType.type, request, method);
} catch (e) {
	usage(e.message);
}

const client = new m.ctor(endpoint, grpc.credentials.createInsecure());
const deadline = new Date(Date.now() + timeout * 1000);
client[method](request, {deadline}, (err, resp) => {
	client.close();
	if (err) {
		const code = Object.keys(grpc.status).find((k) => grpc.status[k] === err.code) || err.code;
		process.stderr.write(`${method}: ${code}: ${err.details || err.message}\n`);
		process.exit(1);
	}
	const out = JSON.stringify(resp, (k, v) => {
		if (v && v.type === 'Buffer' && Array.isArray(v.data)) return Buffer.from(v.data).toString('utf8');
		return v;
	});
	process.stdout.write(out + '\n');
});
