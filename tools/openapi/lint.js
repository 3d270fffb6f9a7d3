// lint.js DOC: validate an OpenAPI document with @apidevtools/swagger-parser (the OpenAPI 3.1
// schema, then its own checks: $refs resolve, path parameters declared, operationIds unique).
// Exit 0 and one line when valid; 1 with the validator's message when not.
'use strict';
const SwaggerParser = require('@apidevtools/swagger-parser');
const doc = process.argv[2];
SwaggerParser.validate(doc)
  .then((api) => {
    let ops = 0;
    for (const p of Object.values(api.paths))
      for (const m of ['get', 'put', 'post', 'delete', 'patch', 'head']) if (p[m]) ops++;
    console.log(`ok: ${doc}: OpenAPI ${api.openapi}, ${Object.keys(api.paths).length} paths, ${ops} operations`);
  })
  .catch((e) => {
    console.error(`FAIL: ${doc}: ${e.message}`);
    process.exit(1);
  });
