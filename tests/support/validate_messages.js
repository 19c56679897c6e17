// Validate message bodies against docs/message.schema.json (JSON Schema 2020-12, with ajv).
// Input: JSON lines as `sqlq queue peek` prints them ({"body": "<decoded text>", ...}).
// Usage: node validate_messages.js SCHEMA < lines; exits 1 naming the first invalid body.
'use strict';
const fs = require('fs');
const path = require('path');
const Ajv2020 = require(path.join(__dirname, '../../node_modules/ajv/dist/2020')).default;

const schema = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const validate = new Ajv2020({allErrors: true, strict: false}).compile(schema);
const lines = fs.readFileSync(0, 'utf8').split('\n').filter((l) => l.trim() !== '');
let n = 0;
for (const line of lines) {
    const body = JSON.parse(JSON.parse(line).body);
    if (!validate(body)) {
        console.error('invalid message:', JSON.stringify(body));
        console.error(JSON.stringify(validate.errors, null, 1).slice(0, 2000));
        process.exit(1);
    }
    n++;
}
console.log(`${n} messages valid`);
process.exit(n > 0 ? 0 : 1);
