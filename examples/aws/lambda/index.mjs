// The Lambda entry point: baton's leader-tag reconciler. Configure the function's handler as
// "index.handler". The AWS SDK v3 clients come with the nodejs20.x runtime.
export { reconcileHandler as handler } from 'baton-election/aws';
