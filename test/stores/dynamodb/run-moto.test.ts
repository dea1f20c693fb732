import { dynamoRunScenario } from './run.js';

await dynamoRunScenario('moto');
