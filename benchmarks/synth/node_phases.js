// Preload for the jsii kernel's Node.js process (NODE_OPTIONS="--require <this file>"):
// CPU time (process.cpuUsage, user + system) spent in aws-cdk-lib's synthesis phases, appended
// as one JSON line to $PHASE_OUT once app.synth() returns. Used by benchmarks/synth_phases.py.
'use strict';
const fs = require('fs');
const path = require('path');
const Module = require('module');

const spent = {};
const cpuMs = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1000; };

function measure(owner, name, key, after) {
  const original = owner[name];
  owner[name] = function (...args) {
    const start = cpuMs();
    try { return original.apply(this, args); } finally {
      spent[key] = (spent[key] || 0) + cpuMs() - start;
      if (after) after();
    }
  };
}

function dump() {
  spent['node process'] = cpuMs();
  if (process.env.PHASE_OUT) fs.appendFileSync(process.env.PHASE_OUT, JSON.stringify(spent) + '\n');
}

let hooked = false;
const load = Module._load;
Module._load = function (request) {
  const loaded = load.apply(this, arguments);
  if (!hooked && typeof request === 'string' && request.endsWith(path.join('aws-cdk-lib', 'index.js'))) {
    hooked = true;  // before the requires below, which come back through here
    const lib = path.dirname(request);
    const validate = require(path.join(lib, 'core/lib/validation/cloudformation-validate-plugin.js'));
    const plugin = validate.CloudFormationValidatePlugin;
    measure(plugin, '_singletonInstance', 'validation engine start');
    measure(plugin.prototype, 'validate', 'validating the templates');
    // The Python side stops the kernel without an exit event: write when synth returns.
    measure(require(path.join(lib, 'core/lib/stage.js')).Stage.prototype, 'synth', 'app.synth', dump);
  }
  return loaded;
};
