// azd `predeploy` hook (azure.yaml). azd ships the sources for a remote build (`remoteBuild: true`),
// and only Flex Consumption runs that build for azd: on Elastic Premium azd zip-deploys without one,
// and the app would start with no compiled code and no node_modules. Stop there, and say what works.
const plan = (process.env.PUSHDRAIN_HOSTING_PLAN ?? 'flex').trim().toLowerCase();
if (plan === 'premium') {
  console.error(
    'azd deploy: this environment uses Elastic Premium (PUSHDRAIN_HOSTING_PLAN=premium), where azd does not run a remote build.\n' +
      'Deploy the prebuilt package instead (docs/DEPLOY.md, "Prebuilt package"):\n' +
      '  npm ci && npm run package && (cd dist-package && zip -qr ../pushdrain.zip .)\n' +
      '  az functionapp deployment source config-zip -g <resource group> -n <app> --src pushdrain.zip --build-remote false',
  );
  process.exit(1);
}
