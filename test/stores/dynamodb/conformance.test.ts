import { dynamoConformance } from './conformance.js';

// A real dynalite (DynamoDB API on LevelDB) in its own process, data on disk.
await dynamoConformance('dynalite');
